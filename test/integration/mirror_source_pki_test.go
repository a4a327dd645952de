package integration

import (
	"sync"
)

var srcPKISerial struct {
	sync.Mutex
	n int64
}
