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

// unlockDataDir releases the data-directory lock. It unlocks before it
// closes: a child process that a concurrent fork (os/exec, in this process)
// is about to exec holds a duplicate of the descriptor until its exec, and
// a close alone leaves the lock held by that duplicate, so a broker
// restarted at once on the same directory was refused as "in use".
func (b *Broker) unlockDataDir() {
	if b.lock == nil {
		return
	}
	syscall.Flock(int(b.lock.Fd()), syscall.LOCK_UN)
	b.lock.Close()
	b.lock = nil
}
