package minibrokertest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minibroker/minibroker/internal/mirror"
)

// MirrorStatus is a mirror's per-partition state, as `minibroker mirror
// describe --json` prints it.
type MirrorStatus = mirror.Status

// Mirror is a mirror on a cluster, driven from test code:
//
//	b.Mirror("from-a", a.Addr()).Start("orders")
//	… b.Mirror("from-a").Stop("orders") // failover: b's orders is writable
type Mirror struct {
	c    *Cluster
	name string
}

// Mirror returns the named mirror, creating it with the given source
// bootstrap addresses when it does not exist yet.
func (c *Cluster) Mirror(name string, source ...string) *Mirror {
	c.t.Helper()
	m := c.Broker().Mirrors()
	if len(source) > 0 {
		if err := m.Create(name, source, ""); err != nil && !errors.Is(err, mirror.ErrExists) {
			c.t.Fatalf("minibrokertest: create mirror %s: %v", name, err)
		}
	}
	return &Mirror{c: c, name: name}
}

// Start mirrors topics from the source. It fails the test when the start
// would cut local data (see StartAllowTruncate).
func (m *Mirror) Start(topics ...string) *Mirror {
	m.c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := m.c.Broker().Mirrors().Start(ctx, m.name, topics); err != nil {
		m.c.t.Fatalf("minibrokertest: start mirror %s: %v", m.name, err)
	}
	return m
}

// MirrorStartReport is what a start cut (or would cut) from the local
// logs to align them with the source, per partition.
type MirrorStartReport = mirror.StartReport

// StartAllowTruncate is Start for a failback: it lets the start cut local
// records past where the log diverges from the source (`mirror start
// --allow-truncate`), which Start refuses, and returns the report.
func (m *Mirror) StartAllowTruncate(topics ...string) MirrorStartReport {
	m.c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rep, err := m.c.Broker().Mirrors().StartWith(ctx, m.name, topics, mirror.StartOptions{AllowTruncate: true})
	if err != nil {
		m.c.t.Fatalf("minibrokertest: start mirror %s: %v", m.name, err)
	}
	return rep
}

// Stop fails the topics over (all of the mirror's when none are named):
// it returns once they are STOPPED and writable.
func (m *Mirror) Stop(topics ...string) {
	m.c.t.Helper()
	if err := m.c.Broker().Mirrors().Stop(m.name, topics); err != nil {
		m.c.t.Fatalf("minibrokertest: stop mirror %s: %v", m.name, err)
	}
}

// Pause and Resume pause and resume fetching.
func (m *Mirror) Pause(topics ...string) {
	m.c.t.Helper()
	if err := m.c.Broker().Mirrors().Pause(m.name, topics); err != nil {
		m.c.t.Fatalf("minibrokertest: pause mirror %s: %v", m.name, err)
	}
}

func (m *Mirror) Resume(topics ...string) {
	m.c.t.Helper()
	if err := m.c.Broker().Mirrors().Resume(m.name, topics); err != nil {
		m.c.t.Fatalf("minibrokertest: resume mirror %s: %v", m.name, err)
	}
}

// Status describes the mirror.
func (m *Mirror) Status() MirrorStatus {
	m.c.t.Helper()
	st, err := m.c.Broker().Mirrors().Describe(m.name)
	if err != nil {
		m.c.t.Fatalf("minibrokertest: describe mirror %s: %v", m.name, err)
	}
	return st
}

// WaitCaughtUp waits until every partition of the mirror is MIRRORING
// with its local high watermark at the source's last stable offset (the mirror
// reads with read_committed, so an open transaction at the source holds it
// there).
func (m *Mirror) WaitCaughtUp(timeout time.Duration) {
	m.c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	st := m.Status()
	cl, err := kgo.NewClient(kgo.SeedBrokers(st.Source...))
	if err != nil {
		m.c.t.Fatalf("minibrokertest: source client: %v", err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	var topics []string
	for _, p := range st.Partitions {
		topics = append(topics, p.Topic)
	}
	var last string
	for ctx.Err() == nil {
		if lso, err := adm.ListCommittedOffsets(ctx, topics...); err == nil {
			st = m.Status()
			if last = lagging(st, lso); last == "" {
				return
			}
		} else {
			last = err.Error()
		}
		time.Sleep(10 * time.Millisecond)
	}
	m.c.t.Fatalf("minibrokertest: mirror %s not caught up after %v: %s", m.name, timeout, last)
}

// lagging describes the first partition not caught up, or "".
func lagging(st MirrorStatus, lso kadm.ListedOffsets) string {
	if len(st.Partitions) == 0 {
		return "no partitions"
	}
	for _, p := range st.Partitions {
		o, ok := lso.Lookup(p.Topic, p.Partition)
		switch {
		case !ok || o.Err != nil:
			return fmt.Sprintf("%s-%d: source offset unknown", p.Topic, p.Partition)
		case p.State != mirror.Mirroring:
			return fmt.Sprintf("%s-%d is %s", p.Topic, p.Partition, p.State)
		case p.LocalHighWatermark < o.Offset:
			return fmt.Sprintf("%s-%d at %d, source at %d", p.Topic, p.Partition, p.LocalHighWatermark, o.Offset)
		}
	}
	return ""
}
