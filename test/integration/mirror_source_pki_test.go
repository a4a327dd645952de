package integration

import (
	"math/big"
	"sync"
	"time"
)

var srcPKISerial struct {
	sync.Mutex
	n int64
}

func srcPKINextSerial() *big.Int {
	srcPKISerial.Lock()
	defer srcPKISerial.Unlock()
	srcPKISerial.n++
	return big.NewInt(time.Now().UnixNano() + srcPKISerial.n)
}
