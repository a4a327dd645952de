package broker

import (
	"syscall"
	"testing"
)

// TestDataDirLockReleasedDespiteDuplicate: a duplicate of the lock's
// descriptor, as a child forked by os/exec holds until its exec, must not
// keep the data directory locked once the broker has let it go.
func TestDataDirLockReleasedDespiteDuplicate(t *testing.T) {
	for _, unlock := range []bool{true, false} {
		dir := t.TempDir()
		first := &Broker{dataDir: dir}
		if err := first.lockDataDir(); err != nil {
			t.Fatal(err)
		}
		dup, err := syscall.Dup(int(first.lock.Fd()))
		if err != nil {
			t.Fatal(err)
		}
		if unlock {
			first.unlockDataDir()
		} else { // negative control: close alone, without the unlock
			first.lock.Close()
			first.lock = nil
		}
		second := &Broker{dataDir: dir}
		err = second.lockDataDir()
		syscall.Close(dup)
		second.unlockDataDir()
		if unlock && err != nil {
			t.Fatalf("relock after unlock with a duplicate open: %v", err)
		}
		if !unlock && err == nil {
			t.Fatal("negative control: close alone released the lock held through a duplicate")
		}
	}
	// A live lock still refuses a second broker.
	dir := t.TempDir()
	first := &Broker{dataDir: dir}
	if err := first.lockDataDir(); err != nil {
		t.Fatal(err)
	}
	defer first.unlockDataDir()
	if err := (&Broker{dataDir: dir}).lockDataDir(); err == nil {
		t.Fatal("two brokers locked one data dir")
	}
}
