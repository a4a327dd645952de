package minibrokertest

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/fault"
)

// FaultSpec is a fault to set on a cluster (see Cluster.Fault); its
// fields are described in docs/FAULTS.md. API keys and error codes are
// Kafka's: kmsg.Produce, kerr.NotLeaderForPartition.Code.
type FaultSpec = fault.Spec

// FaultStatus is a fault as listed, with what it has done so far.
type FaultStatus = fault.Status

// FaultKind is what a fault does.
type FaultKind = fault.Kind

// The kinds of fault.
const (
	// FaultError answers an API's requests with ErrorCode.
	FaultError = fault.Error
	// FaultLatency delays an API's requests by LatencyMs.
	FaultLatency = fault.Latency
	// FaultDrop closes the connection instead of answering.
	FaultDrop = fault.Drop
	// FaultStorage fails Produce to a topic (partition) with
	// KAFKA_STORAGE_ERROR; nothing is appended.
	FaultStorage = fault.Storage
	// FaultMirrorPause stalls a mirror's connections to its source.
	FaultMirrorPause = fault.MirrorPause
	// FaultMirrorThrottle limits a mirror's reads from its source to
	// BytesPerSecond.
	FaultMirrorThrottle = fault.MirrorThrottle
	// FaultMirrorUnreachable cuts a mirror's source connections and
	// refuses new ones.
	FaultMirrorUnreachable = fault.MirrorUnreachable
)

// Key is FaultSpec.APIKey for an API: Key(kmsg.Produce).
func Key(k kmsg.Key) *int16 {
	v := int16(k)
	return &v
}

// PartitionOf is FaultSpec.Partition for a partition index.
func PartitionOf(p int32) *int32 { return &p }

// Fault is a fault set on a cluster.
type Fault struct {
	c    *Cluster
	id   string
	last FaultStatus // as it was when cleared
}

// Fault sets a fault on the cluster and clears it when the test that
// started the cluster ends (its t.Cleanup, before the cluster closes), or
// at Clear. Faults belong to the cluster, not to one
// broker run: they hold across Restart, and Kill followed by Revive.
//
//	f := c.Fault(minibrokertest.FaultSpec{Kind: minibrokertest.FaultError,
//		APIKey: minibrokertest.Key(kmsg.Produce), ErrorCode: kerr.NotLeaderForPartition.Code, Count: 3})
//	… f.Fired() == 3
//
// It fails the test when the spec is invalid, or when the cluster was
// started with Set("faults.enable", "false").
func (c *Cluster) Fault(spec FaultSpec) *Fault {
	c.t.Helper()
	if !c.cfg.Bool("faults.enable") {
		c.t.Fatalf("minibrokertest: fault injection is off (faults.enable=false)")
	}
	st, err := c.faults.Set(spec)
	if err != nil {
		c.t.Fatalf("minibrokertest: %v", err)
	}
	f := &Fault{c: c, id: st.ID}
	c.t.Cleanup(f.Clear)
	return f
}

// ID is the fault's id, as the HTTP API and `minibroker fault list` show it.
func (f *Fault) ID() string { return f.id }

// Status is what the fault has done so far: matched and fired requests,
// whether it can still fire. A cleared fault reports Active false.
func (f *Fault) Status() FaultStatus {
	if st, ok := f.c.faults.Get(f.id); ok {
		return st
	}
	return f.last
}

// Fired is how many requests the fault has acted on.
func (f *Fault) Fired() int64 { return f.Status().Fired }

// Clear removes the fault; clearing it again does nothing.
func (f *Fault) Clear() {
	if st, ok := f.c.faults.Get(f.id); ok {
		st.Active = false
		f.last = st
		f.c.faults.Clear(f.id)
	}
}

// ClearFaults removes every fault set on the cluster.
func (c *Cluster) ClearFaults() { c.faults.ClearAll() }
