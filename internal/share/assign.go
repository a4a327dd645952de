package share

import (
	"slices"
	"sort"
)

// assignSimple is the share groups' assignor, Kafka's "simple"
// (group.share.assignors): every subscribed partition goes to at least
// one member and members are balanced. With at least as many members as
// partitions each member gets one partition and each partition is
// shared by at most ceil(members/partitions) of them; with fewer, each
// partition has one member and a member gets at most
// ceil(partitions/members). It is sticky: a member keeps what it was
// assigned as far as those bounds allow, so heartbeats and other
// members' comings and goings move as few partitions as possible
// (Kafka's assignment builders keep the current assignment first too).
// Ties go to the member or partition first in id order.
func assignSimple(g *Group, byName map[string]TopicInfo, topics []string, sticky bool) {
	type part struct {
		topic [16]byte
		p     int32
	}
	var parts []part
	eligible := map[part][]string{} // subscribers, in id order
	ids := make([]string, 0, len(g.Members))
	for id := range g.Members {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	active := 0
	for _, id := range ids {
		if len(g.Members[id].Topics) > 0 {
			active++
		}
	}
	for _, name := range topics {
		t, ok := byName[name]
		if !ok || t.Partitions <= 0 {
			continue
		}
		var subs []string
		for _, id := range ids {
			if slices.Contains(g.Members[id].Topics, name) {
				subs = append(subs, id)
			}
		}
		for p := int32(0); p < t.Partitions; p++ {
			pt := part{t.ID, p}
			parts = append(parts, pt)
			eligible[pt] = subs
		}
	}
	out := map[string][]part{}
	sharing := map[part]int{}
	P, M := len(parts), active
	share, quota := 1, 1
	if M > 0 && P > 0 {
		if M >= P {
			share = (M + P - 1) / P
		} else {
			quota = (P + M - 1) / M
		}
	}
	// The current assignment, kept within the bounds: first up to the
	// lower bound each (floor(P/M) when members are fewer), then one
	// more for as many members as can have ceil(P/M).
	if sticky {
		cur := map[string][]part{}
		for _, id := range ids {
			for topic, ps := range g.Members[id].Assigned {
				for _, p := range ps {
					cur[id] = append(cur[id], part{topic, p})
				}
			}
			sort.Slice(cur[id], func(i, j int) bool {
				a, b := cur[id][i], cur[id][j]
				if a.topic != b.topic {
					return string(a.topic[:]) < string(b.topic[:])
				}
				return a.p < b.p
			})
		}
		keep := func(id string, limit int) {
			for _, pt := range cur[id] {
				if len(out[id]) >= limit {
					return
				}
				if !slices.Contains(eligible[pt], id) || sharing[pt] >= share || slices.Contains(out[id], pt) {
					continue
				}
				out[id] = append(out[id], pt)
				sharing[pt]++
			}
		}
		low, extra := quota, 0
		if M > 0 && M < P {
			low, extra = P/M, P%M
		}
		for _, id := range ids {
			keep(id, low)
		}
		for _, id := range ids {
			if extra == 0 {
				break
			}
			if n := len(out[id]); n == low {
				keep(id, low+1)
				if len(out[id]) > n {
					extra--
				}
			}
		}
	}
	// Every partition without a member goes to its least loaded
	// subscriber.
	for _, pt := range parts {
		if sharing[pt] > 0 {
			continue
		}
		best := ""
		for _, id := range eligible[pt] {
			if best == "" || len(out[id]) < len(out[best]) {
				best = id
			}
		}
		if best != "" {
			out[best] = append(out[best], pt)
			sharing[pt]++
		}
	}
	// A member still without a partition shares the least shared one it
	// subscribes to.
	for _, id := range ids {
		if len(out[id]) > 0 || len(g.Members[id].Topics) == 0 {
			continue
		}
		var best *part
		for i := range parts {
			pt := parts[i]
			if slices.Contains(eligible[pt], id) && (best == nil || sharing[pt] < sharing[*best]) {
				best = &parts[i]
			}
		}
		if best != nil {
			out[id] = append(out[id], *best)
			sharing[*best]++
		}
	}
	for _, id := range ids {
		a := map[[16]byte][]int32{}
		for _, pt := range out[id] {
			a[pt.topic] = append(a[pt.topic], pt.p)
		}
		for _, ps := range a {
			slices.Sort(ps)
		}
		g.Members[id].Assigned = a
	}
}
