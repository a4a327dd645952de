package broker

// Share groups (KIP-932) in the broker: the share coordinator
// (internal/share) opened beside the group coordinator, its tick (member
// session timeouts and acquisition lock expiry), and the settings a
// share group reads: the group's configs (share.record.lock.duration.ms,
// share.isolation.level, share.auto.offset.reset, share.session.timeout.ms,
// share.heartbeat.interval.ms) over the broker's group.share.* settings.
// docs/SHARE_GROUPS.md lists the deviations from Kafka.

import (
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/coordinator"
	"github.com/minibroker/minibroker/internal/partition"
	"github.com/minibroker/minibroker/internal/share"
)

// shareTick is how often member sessions and acquisition locks are
// checked: a lock ends at most this late.
const shareTick = 100 * time.Millisecond

func (b *Broker) openShareGroups() error {
	b.shareStore = &share.TopicStore{Log: b.shareStateTopicLog(),
		PerSnapshot: int(b.cfg.Int32("share.coordinator.snapshot.update.records.per.snapshot"))}
	if err := b.migrateShareStateFiles(); err != nil {
		return err
	}
	c, err := share.NewCoordinator(share.WithTestHooks(share.Options{
		Topics:  b.shareTopics,
		Store:   b.shareStore,
		MaxSize: int(b.cfg.Int32("group.share.max.size")),
	}, b.knobs.hooks.Share))
	if err != nil {
		return err
	}
	b.shares = c
	return nil
}

func (b *Broker) shareTopics() []share.TopicInfo {
	b.mu.RLock()
	defer b.mu.RUnlock()
	out := make([]share.TopicInfo, 0, len(b.topics))
	for _, t := range b.topics {
		out = append(out, share.TopicInfo{Name: t.Name, ID: t.ID, Partitions: int32(len(t.Partitions))})
	}
	return out
}

// shareLoop ticks the share coordinator until the broker stops.
func (b *Broker) shareLoop() {
	t := time.NewTicker(shareTick)
	defer t.Stop()
	for {
		select {
		case <-b.stop:
			return
		case <-t.C:
			b.shares.Tick()
		}
	}
}

// shareGroupSetting is a group's config override of name, else the
// broker's setting def.
func (b *Broker) shareGroupSetting(group, name, def string) string {
	if v, ok := b.resourceConfigs.overrides(kmsg.ConfigResourceTypeGroupConfig, group)[name]; ok {
		return v
	}
	if def == "" {
		return ""
	}
	return b.cfg.String(def)
}

func (b *Broker) shareGroupMs(group, name, def string) time.Duration {
	n, _ := strconv.ParseInt(b.shareGroupSetting(group, name, def), 10, 64)
	return time.Duration(n) * time.Millisecond
}

// sharePartitionConfig is a share partition's limits in group.
func (b *Broker) sharePartitionConfig(group string) share.Config {
	lock := b.shareGroupMs(group, "share.record.lock.duration.ms", "group.share.record.lock.duration.ms")
	return share.Config{
		LockDuration:  lock,
		DeliveryLimit: int16(b.cfg.Int32("group.share.delivery.count.limit")),
		MaxInFlight:   int(b.cfg.Int32("group.share.partition.max.record.locks")),
	}
}

// nonShareGroupExists reports a classic or consumer group of that id:
// group ids are one namespace (Kafka's GroupCoordinatorService).
func (b *Broker) nonShareGroupExists(id string) bool {
	for _, g := range b.groups.ListGroups() {
		if g.Group == id {
			return true
		}
	}
	return false
}

// mirrorShares adapts the share coordinator to the mirror's share group
// offset sync (mirror.ShareOffsets).
type mirrorShares struct{ b *Broker }

func (s mirrorShares) ShareGroupActive(group string) bool {
	return len(s.b.shares.Describe(group).Members) > 0
}

func (s mirrorShares) ClampShareOffsets(ends map[coordinator.TopicPartition]int64) (int, error) {
	byID := map[share.TP]int64{}
	for tp, end := range ends {
		if t, ok := s.b.Topic(tp.Topic); ok {
			byID[share.TP{Topic: t.ID, Partition: tp.Partition}] = end
		}
	}
	return s.b.shares.Truncate(byID)
}

func (s mirrorShares) AlterShareOffsets(group string, offsets map[coordinator.TopicPartition]int64) error {
	byID := map[share.TP]int64{}
	for tp, off := range offsets {
		t, ok := s.b.Topic(tp.Topic)
		if !ok {
			continue
		}
		byID[share.TP{Topic: t.ID, Partition: tp.Partition}] = off
	}
	res, e := s.b.shares.AlterOffsets(group, byID)
	if e != nil {
		return e
	}
	for _, err := range res {
		if err != nil {
			return err
		}
	}
	return nil
}

// shareResetOffset is where a new share partition of p starts
// (share.auto.offset.reset): "earliest" the log start; by_duration:<d>
// the first offset whose timestamp is at or after now-d, as ListOffsets
// by timestamp finds it, and the high watermark when no record is that
// recent; "latest" (the default) the high watermark.
func shareResetOffset(reset string, p *partition.Partition, o partition.Offsets, now time.Time) int64 {
	if reset == "earliest" {
		return o.LogStart
	}
	d, ok := shareResetDuration(reset)
	if !ok {
		return o.HighWatermark
	}
	off, _, found := p.OffsetForTimestamp(now.Add(-d).UnixMilli())
	if !found || off >= o.HighWatermark {
		return o.HighWatermark
	}
	return max(off, o.LogStart)
}
