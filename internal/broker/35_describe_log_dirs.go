package broker

// DescribeLogDirs, v0–v4 (KIP-113).
//
// One log directory, the data dir (absolute path), with the size of each
// partition's log — the bytes of its segment files, as Kafka's
// UnifiedLog.size — an offset lag of 0 and no future replica. Topics null
// asks for every partition; named partitions this node does not have are
// left out, as Kafka does. v3+ answers a top-level error code (0).
//
// Deviation: TotalBytes and UsableBytes (v4) are -1 ("unknown" in
// Kafka's schema): the broker does not query the file system for them.

import (
	"context"
	"path/filepath"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/protocol"
)

func (b *Broker) handleDescribeLogDirs(_ context.Context, r *protocol.Request) kmsg.Response {
	req := r.Body.(*kmsg.DescribeLogDirsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeLogDirsResponse)
	dir := kmsg.NewDescribeLogDirsResponseDir()
	dir.Dir = b.dataDir
	if abs, err := filepath.Abs(b.dataDir); err == nil {
		dir.Dir = abs
	}
	dir.TotalBytes, dir.UsableBytes = -1, -1
	add := func(name string, wanted []int32) {
		parts := b.partitionsOf(name)
		if parts == nil {
			return
		}
		dt := kmsg.NewDescribeLogDirsResponseDirTopic()
		dt.Topic = name
		describe := func(i int32) {
			p := parts.at(i)
			if p == nil {
				return
			}
			dp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
			dp.Partition = i
			dp.Size = p.Size()
			dt.Partitions = append(dt.Partitions, dp)
		}
		if wanted == nil {
			for i := range parts {
				describe(int32(i))
			}
		} else {
			for _, i := range wanted {
				describe(i)
			}
		}
		if len(dt.Partitions) > 0 {
			dir.Topics = append(dir.Topics, dt)
		}
	}
	if req.Topics == nil {
		for _, name := range b.TopicNames() {
			add(name, nil)
		}
	} else {
		for _, rt := range req.Topics {
			add(rt.Topic, rt.Partitions)
		}
	}
	resp.Dirs = append(resp.Dirs, dir)
	return resp
}
