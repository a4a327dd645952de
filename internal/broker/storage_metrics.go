package broker

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// storageCollector reports, at scrape time, the partitions whose log is
// offline for writes after a storage failure and the storage failures
// that left a log writable (internal/log/retry.go).
type storageCollector struct{ b *Broker }

var (
	descOffline = prometheus.NewDesc("minibroker_offline_partitions",
		"Partitions whose log is offline for writes after a storage failure (until a restart); they serve reads below their flushed offset only.", nil, nil)
	descPartitionOffline = prometheus.NewDesc("minibroker_partition_offline",
		"1 for each partition whose log is offline for writes (only offline partitions are listed).", []string{"topic", "partition"}, nil)
	descRetryable = prometheus.NewDesc("minibroker_storage_retryable_failures",
		"Storage failures that left a partition writable (a failed segment roll, a write refused for lack of space), summed over partitions open now.", nil, nil)
)

func (c *storageCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descOffline
	ch <- descPartitionOffline
	ch <- descRetryable
}

func (c *storageCollector) Collect(ch chan<- prometheus.Metric) {
	offline, retryable := 0, int64(0)
	for _, name := range c.b.TopicNames() {
		t, ok := c.b.Topic(name)
		if !ok {
			continue
		}
		for _, p := range c.b.partitions(t) {
			retryable += p.RetryableStorageFailures()
			if p.Offline() == nil {
				continue
			}
			offline++
			ch <- prometheus.MustNewConstMetric(descPartitionOffline, prometheus.GaugeValue, 1, name, strconv.Itoa(int(p.Index)))
		}
	}
	ch <- prometheus.MustNewConstMetric(descOffline, prometheus.GaugeValue, float64(offline))
	ch <- prometheus.MustNewConstMetric(descRetryable, prometheus.GaugeValue, float64(retryable))
}
