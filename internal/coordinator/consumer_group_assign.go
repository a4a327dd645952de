package coordinator

import (
	"slices"
	"sort"
)

// The server-side assignors of group.consumer.assignors: "uniform" and
// "range", Kafka's UniformAssignor and RangeAssignor by their names. The
// group uses the assignor most of its members ask for (ServerAssignor),
// ties broken by the order of group.consumer.assignors, else the first of
// that list, as Kafka's preferredServerAssignor.
//
// As Kafka's (4.0 to trunk): neither uses racks (the members' RackId is
// stored and described only; Kafka's built-in assignors are not
// rack-aware, KAFKA-19909 being open); "uniform" is sticky and balanced
// to within one partition per member among the members that subscribe to
// a topic (balance first, then stickiness), by its own algorithm (Kafka's
// has two, for homogeneous and heterogeneous subscriptions, with other
// tie-breaks, so the exact mapping can differ); "range" is not sticky
// (Kafka's since KAFKA-16944): each topic's partitions go in contiguous
// ranges to its subscribers, static members first in instance id order,
// then the others in member id order, so static members keep their
// ranges across restarts.

// assignorFor is the group's assignor.
func (c *groupCore) assignorFor(cg *consumerGroup) string {
	names := c.consumerAssignors()
	votes := map[string]int{}
	for _, m := range cg.members {
		if m.serverAssignor != "" {
			votes[m.serverAssignor]++
		}
	}
	best, bestVotes := names[0], 0
	for _, n := range names {
		if votes[n] > bestVotes {
			best, bestVotes = n, votes[n]
		}
	}
	return best
}

type assignTP struct {
	topic string
	id    TopicID
	p     int32
}

// assign computes the target assignment of every member.
func (c *groupCore) assign(cg *consumerGroup, im *TopicImage) map[string]assignment {
	members := cg.sortedMembers()
	subs := make(map[string]map[string]bool, len(members))
	topicSet := map[string]bool{}
	for _, m := range members {
		s := map[string]bool{}
		for _, t := range cg.topicsOf(m, im) {
			s[t] = true
			topicSet[t] = true
		}
		subs[m.id] = s
	}
	topics := make([]string, 0, len(topicSet))
	for t := range topicSet {
		topics = append(topics, t)
	}
	sort.Strings(topics)
	out := make(map[string]assignment, len(members))
	for _, m := range members {
		out[m.id] = assignment{}
	}
	if c.assignorFor(cg) == "range" {
		assignRange(members, subs, topics, im, out)
	} else {
		assignUniform(members, subs, topics, im, cg.target, out)
	}
	return out
}

func assignRange(members []*cgMember, subs map[string]map[string]bool, topics []string, im *TopicImage, out map[string]assignment) {
	members = rangeOrder(members)
	for _, t := range topics {
		info := im.ByName[t]
		var ms []*cgMember
		for _, m := range members {
			if subs[m.id][t] {
				ms = append(ms, m)
			}
		}
		n, k := int(info.Partitions), len(ms)
		next := int32(0)
		for i, m := range ms {
			size := n / k
			if i < n%k {
				size++
			}
			for j := 0; j < size; j++ {
				out[m.id].add(info.ID, next)
				next++
			}
		}
	}
}

// assignUniform keeps each partition with its previous target owner when
// that member still subscribes to its topic, gives the others to the
// eligible member with the fewest partitions, then moves partitions from
// the most to the least loaded eligible member until no move lowers the
// spread.
func assignUniform(members []*cgMember, subs map[string]map[string]bool, topics []string, im *TopicImage, prev map[string]assignment, out map[string]assignment) {
	count := map[string]int{}
	owner := map[TopicID]map[int32]string{}
	var free []assignTP
	for _, t := range topics {
		info := im.ByName[t]
		owner[info.ID] = map[int32]string{}
		for p := int32(0); p < info.Partitions; p++ {
			kept := false
			for _, m := range members {
				if subs[m.id][t] && prev[m.id].has(info.ID, p) {
					out[m.id].add(info.ID, p)
					owner[info.ID][p] = m.id
					count[m.id]++
					kept = true
					break
				}
			}
			if !kept {
				free = append(free, assignTP{t, info.ID, p})
			}
		}
	}
	leastLoaded := func(topic string, except string) *cgMember {
		var best *cgMember
		for _, m := range members {
			if m.id == except || !subs[m.id][topic] {
				continue
			}
			if best == nil || count[m.id] < count[best.id] {
				best = m
			}
		}
		return best
	}
	for _, tp := range free {
		if m := leastLoaded(tp.topic, ""); m != nil {
			out[m.id].add(tp.id, tp.p)
			owner[tp.id][tp.p] = m.id
			count[m.id]++
		}
	}
	// Balance: a member with two more partitions than an eligible peer
	// gives it one, taken first from the most loaded of the topic's
	// subscribers (a strict pass: only partitions over the new quota move,
	// as Kafka's assignors move the minimum), then, when that moves
	// nothing, from any member (so heterogeneous subscriptions balance
	// too). Each move lowers the sum of squared counts, so this ends; the
	// bound is a guard.
	maxLoaded := func(topic string) int {
		n := 0
		for _, m := range members {
			if subs[m.id][topic] {
				n = max(n, count[m.id])
			}
		}
		return n
	}
	pass := func(strict bool) bool {
		moved := false
		for _, t := range topics {
			info := im.ByName[t]
			for p := info.Partitions - 1; p >= 0; p-- {
				from := owner[info.ID][p]
				to := leastLoaded(t, from)
				if to == nil || count[from]-count[to.id] < 2 || (strict && count[from] < maxLoaded(t)) {
					continue
				}
				ps := out[from][info.ID]
				for i, q := range ps {
					if q == p {
						out[from][info.ID] = append(ps[:i:i], ps[i+1:]...)
						break
					}
				}
				if len(out[from][info.ID]) == 0 {
					delete(out[from], info.ID)
				}
				out[to.id].add(info.ID, p)
				owner[info.ID][p] = to.id
				count[from]--
				count[to.id]++
				moved = true
			}
		}
		return moved
	}
	for iter := 0; iter < 1<<20; iter++ {
		if !pass(true) && !pass(false) {
			break
		}
	}
}

// rangeOrder is Kafka's RangeAssignor.sortMemberIds: members with an
// instance id first, by instance id, then the others by member id.
func rangeOrder(members []*cgMember) []*cgMember {
	out := slices.Clone(members)
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		switch {
		case a.instanceID != "" && b.instanceID != "":
			return a.instanceID < b.instanceID
		case a.instanceID != "" || b.instanceID != "":
			return a.instanceID != ""
		}
		return a.id < b.id
	})
	return out
}
