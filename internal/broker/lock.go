package broker

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockDataDir takes an exclusive flock on DATA/.lock, as Kafka does, so two
// brokers never share a data directory. The lock dies with the process.
func (b *Broker) lockDataDir() error {
	f, err := os.OpenFile(filepath.Join(b.dataDir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return fmt.Errorf("data dir lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return fmt.Errorf("data dir %s is in use by another broker: %w", b.dataDir, err)
	}
	b.lock = f
	return nil
}
