package drill

import (
	"context"
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minibroker/minibroker/internal/mirror"
)

// PartitionReport is the drill's measurement for one partition, next to
// what the plan predicted for it.
type PartitionReport struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Acked     int    `json:"acked"` // on every cluster
	// LostAtFailover, LostOnB, Gaps and Duplicates count the report's
	// lists of the same names for this partition.
	LostAtFailover int `json:"lost_at_failover"`
	LostOnB        int `json:"lost_on_b"`
	Gaps           int `json:"gaps"`
	Duplicates     int `json:"duplicates"`
	// PredictedLost is the plans' lost_records for the partition (with a
	// failback, the failback plan's added, and the start's divergence
	// truncation in offsets); -1 when a plan could not read its batches.
	PredictedLost int64 `json:"predicted_lost"`
	// RPOMillis is the measured RPO in time: from the acknowledgement of
	// the partition's oldest record lost at the failover to the stop
	// command (0 when none was lost). PlanRPOMillis is the plan's, from
	// the batch timestamps.
	RPOMillis     int64 `json:"rpo_ms"`
	PlanRPOMillis int64 `json:"plan_rpo_ms"`
}

// partitionsOf lists every partition of the topics on the cluster at
// seeds, in topic order then partition order: the canary writes to each
// in turn.
func partitionsOf(ctx context.Context, seeds, topics []string) ([]target, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	details, err := kadm.NewClient(cl).ListTopics(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("drill: topics on A: %w", err)
	}
	var out []target
	for _, t := range topics {
		d, ok := details[t]
		if !ok || d.Err != nil {
			return nil, fmt.Errorf("drill: topic %s on A: %v", t, d.Err)
		}
		for _, p := range d.Partitions.Numbers() {
			out = append(out, target{t, p})
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("drill: the topics have no partitions on A")
	}
	return out, nil
}

// predicted is what a plan says a failover loses: the acknowledged
// records when every partition's batches were read, else the offsets
// truncated and missing.
func predicted(pl mirror.Plan) (int64, string) {
	for _, p := range pl.Partitions {
		if p.LostRecords < 0 || !p.ScanComplete {
			return pl.WouldTruncate + pl.MissingRecords, "offsets"
		}
	}
	return pl.LostRecords, "records"
}

// partitionReports fills rep.Partitions and rep.RPOMillis from the
// report's lists (analyse has made them) and the plans.
func (rep *Report) partitionReports(acked map[int64]string) {
	if rep.where == nil {
		return
	}
	byTP := map[target]*PartitionReport{}
	get := func(k target) *PartitionReport {
		pr := byTP[k]
		if pr == nil {
			pr = &PartitionReport{Topic: k.Topic, Partition: k.Partition}
			byTP[k] = pr
		}
		return pr
	}
	for _, k := range rep.where {
		get(k)
	}
	for s := range acked {
		get(rep.where[s]).Acked++
	}
	for _, s := range rep.LostAtFailover {
		pr := get(rep.where[s])
		pr.LostAtFailover++
		if at := rep.ackAt[s]; at > 0 {
			pr.RPOMillis = max(pr.RPOMillis, rep.StopAtMs-at)
		}
	}
	for _, s := range rep.LostOnB {
		get(rep.where[s]).LostOnB++
	}
	for _, s := range rep.Gaps {
		get(rep.where[s]).Gaps++
	}
	for _, s := range rep.Duplicates {
		get(rep.where[s]).Duplicates++
	}
	plans := []*mirror.Plan{&rep.Plan, rep.FailbackPlan}
	for k, pr := range byTP {
		for _, pl := range plans {
			if pl == nil {
				continue
			}
			for _, pp := range pl.Partitions {
				if pp.Topic != k.Topic || pp.Partition != k.Partition {
					continue
				}
				switch {
				case pp.LostRecords < 0 || pr.PredictedLost < 0:
					pr.PredictedLost = -1
				default:
					pr.PredictedLost += pp.LostRecords
				}
				pr.PlanRPOMillis = max(pr.PlanRPOMillis, pp.RPOMillis)
			}
		}
		if sp := rep.FailbackStartPlan; sp != nil && pr.PredictedLost >= 0 {
			for _, pp := range sp.Partitions {
				if pp.Topic == k.Topic && pp.Partition == k.Partition {
					pr.PredictedLost += max(pp.DivergenceTruncate, 0)
				}
			}
		}
		rep.RPOMillis = max(rep.RPOMillis, pr.RPOMillis)
		rep.Partitions = append(rep.Partitions, *pr)
	}
	sort.Slice(rep.Partitions, func(i, j int) bool {
		a, b := rep.Partitions[i], rep.Partitions[j]
		if a.Topic != b.Topic {
			return a.Topic < b.Topic
		}
		return a.Partition < b.Partition
	})
	for _, pr := range rep.Partitions {
		if pr.PredictedLost >= 0 && int64(pr.LostAtFailover) > pr.PredictedLost {
			rep.Problems = append(rep.Problems, fmt.Sprintf("%s-%d: %d records lost at the failover, the plan predicted %d",
				pr.Topic, pr.Partition, pr.LostAtFailover, pr.PredictedLost))
		}
	}
}
