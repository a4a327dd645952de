package share

import (
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Summary is a share group as ListGroups shows it.
type Summary struct {
	ID    string
	State string // Empty or Stable
}

func (g *Group) state() string {
	if len(g.Members) == 0 {
		return "Empty"
	}
	return "Stable"
}

// List is every share group.
func (c *Coordinator) List() []Summary {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]Summary, 0, len(c.groups))
	for id, g := range c.groups {
		out = append(out, Summary{ID: id, State: g.state()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// MemberDescription is a member as ShareGroupDescribe shows it.
type MemberDescription struct {
	ID, ClientID, ClientHost string
	Rack                     *string
	Epoch                    int32
	Topics                   []string
	Assigned                 map[[16]byte][]int32
}

// Description is a share group as ShareGroupDescribe shows it.
type Description struct {
	Found                  bool
	State                  string
	Epoch, AssignmentEpoch int32
	Members                []MemberDescription
}

// Describe describes a share group.
func (c *Coordinator) Describe(id string) Description {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.groups[id]
	if g == nil {
		return Description{}
	}
	d := Description{Found: true, State: g.state(), Epoch: g.Epoch, AssignmentEpoch: g.AssignE}
	for _, m := range g.Members {
		d.Members = append(d.Members, MemberDescription{ID: m.ID, ClientID: m.ClientID, ClientHost: m.ClientHost,
			Rack: m.Rack, Epoch: m.Epoch, Topics: append([]string(nil), m.Topics...), Assigned: cloneAssign(m.Assigned)})
	}
	sort.Slice(d.Members, func(i, j int) bool { return d.Members[i].ID < d.Members[j].ID })
	return d
}

// PartitionOffset is one share partition's start offset, and how many
// records from it up to hwm are not yet finished (the lag).
type PartitionOffset struct {
	Start, Lag int64
}

// Offsets is group's share partitions' start offsets; hwm gives each
// partition's high watermark for the lag (false: unknown, lag -1).
func (c *Coordinator) Offsets(group string, hwm func(TP) (int64, bool)) (map[TP]PartitionOffset, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.groups[group]
	if g == nil {
		return nil, false
	}
	out := make(map[TP]PartitionOffset, len(g.parts))
	for tp, p := range g.parts {
		po := PartitionOffset{Start: p.Start(), Lag: -1}
		if h, ok := hwm(tp); ok {
			po.Lag = p.lag(h)
		}
		out[tp] = po
	}
	return out, true
}

// lag counts the offsets below hwm not yet acknowledged or archived.
func (p *Partition) lag(hwm int64) int64 {
	n := int64(0)
	for i, r := range p.recs {
		if p.start+int64(i) >= hwm {
			break
		}
		if r.state == Available || r.state == Acquired {
			n++
		}
	}
	if hwm > p.End() {
		n += hwm - p.End()
	}
	return n
}

// AlterOffsets sets share partitions' start offsets (AlterShareGroupOffsets):
// only on a group with no members (GROUP_NOT_EMPTY); a group that does
// not exist is created. Each partition's window is emptied and stored.
func (c *Coordinator) AlterOffsets(group string, offsets map[TP]int64) (map[TP]*kerr.Error, *kerr.Error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.groups[group]
	if g != nil && len(g.Members) > 0 {
		return nil, kerr.NonEmptyGroup
	}
	g = c.getOrCreate(group)
	out := make(map[TP]*kerr.Error, len(offsets))
	for tp, off := range offsets {
		p := g.parts[tp]
		if p == nil {
			p = NewPartition(Config{}, off)
			g.parts[tp] = p
		}
		before := p.clone()
		p.Reset(off)
		if st := c.store(); st != nil {
			if err := st.Save(group, tp, p.Snapshot()); err != nil {
				g.parts[tp] = before
				out[tp] = kerr.KafkaStorageError
				continue
			}
		}
		out[tp] = nil
	}
	return out, nil
}

// Truncate applies a log truncation to every share group: each share
// partition tp in ends is cut at ends[tp] (Partition.Truncate) and
// stored; it answers how many share partitions changed. A mirror's
// failover calls it after cutting the mirrored partitions, before they
// become writable.
func (c *Coordinator) Truncate(ends map[TP]int64) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, g := range c.groups {
		for tp, p := range g.parts {
			end, ok := ends[tp]
			if !ok {
				continue
			}
			before := p.clone()
			if !p.Truncate(end) {
				continue
			}
			if st := c.store(); st != nil {
				if err := st.Save(g.ID, tp, p.Snapshot()); err != nil {
					g.parts[tp] = before
					return n, err
				}
			}
			n++
		}
	}
	return n, nil
}

// DeleteOffsets forgets share partitions' state (DeleteShareGroupOffsets):
// only on a group with no members; GROUP_ID_NOT_FOUND for none.
func (c *Coordinator) DeleteOffsets(group string, tps []TP) (map[TP]*kerr.Error, *kerr.Error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.groups[group]
	switch {
	case g == nil:
		return nil, kerr.GroupIDNotFound
	case len(g.Members) > 0:
		return nil, kerr.NonEmptyGroup
	}
	out := make(map[TP]*kerr.Error, len(tps))
	for _, tp := range tps {
		if c.opt.Store != nil {
			if err := c.opt.Store.Delete(group, tp); err != nil {
				out[tp] = kerr.KafkaStorageError
				continue
			}
		}
		delete(g.parts, tp)
		out[tp] = nil
	}
	return out, nil
}

// DeleteGroup deletes an empty share group and its state (DeleteGroups):
// GROUP_ID_NOT_FOUND, or NON_EMPTY_GROUP with members.
func (c *Coordinator) DeleteGroup(group string) *kerr.Error {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.groups[group]
	switch {
	case g == nil:
		return kerr.GroupIDNotFound
	case len(g.Members) > 0:
		return kerr.NonEmptyGroup
	}
	for tp := range g.parts {
		if c.opt.Store != nil {
			if err := c.opt.Store.Delete(group, tp); err != nil {
				return kerr.KafkaStorageError
			}
		}
		delete(g.parts, tp)
	}
	delete(c.groups, group)
	return nil
}
