package config

import (
	"fmt"
	"strconv"
	"strings"
)

// Kind is a setting's value type.
type Kind int

const (
	KindInt    Kind = 1
	KindBool   Kind = 2
	KindString Kind = 3
)

// Setting is one Kafka-named setting with Kafka's default.
type Setting struct {
	Name    string
	Kind    Kind
	Default string
	Min     int64
	Doc     string
	// Topic is the topic-level name that this broker setting is the
	// default for (as Kafka's log.retention.ms → retention.ms), if any.
	Topic string
	// Check validates a value beyond its kind, if set.
	Check func(string) error
}

func (s Setting) check(v string) error {
	switch s.Kind {
	case KindInt:
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("not an integer")
		}
		if n < s.Min {
			return fmt.Errorf("must be at least %d", s.Min)
		}
	case KindBool:
		if _, err := strconv.ParseBool(v); err != nil {
			return fmt.Errorf("not true or false")
		}
	}
	if s.Check != nil {
		return s.Check(v)
	}
	return nil
}

func checkConnectionOverrides(v string) error {
	_, err := ParseConnectionOverrides(v)
	return err
}

// ParseConnectionOverrides parses max.connections.per.ip.overrides as
// Kafka's Csv.parseCsvMap does: entries split at commas (spaces around
// them ignored), each split at its last colon (so an IPv6 address may be
// a key), key and count trimmed; the count must be an integer. The keys
// are host names or IP addresses, resolved by the caller.
func ParseConnectionOverrides(v string) (map[string]int, error) {
	out := map[string]int{}
	if strings.TrimSpace(v) == "" {
		return out, nil
	}
	for _, entry := range strings.Split(v, ",") {
		entry = strings.TrimSpace(entry)
		i := strings.LastIndex(entry, ":")
		if i < 0 {
			return nil, fmt.Errorf("override %q: want host:count", entry)
		}
		host := strings.TrimSpace(entry[:i])
		n, err := strconv.ParseInt(strings.TrimSpace(entry[i+1:]), 10, 32)
		if err != nil || host == "" {
			return nil, fmt.Errorf("override %q: want host:count", entry)
		}
		out[host] = int(n)
	}
	return out, nil
}

const maxLong = "9223372036854775807"

// settings are Kafka's broker settings minibroker honours, with Kafka's
// defaults (except where Doc says otherwise).
var settings = []Setting{
	{Name: "num.partitions", Kind: KindInt, Default: "1", Min: 1, Doc: "Partitions of an auto-created topic or a CreateTopics with -1."},
	{Name: "default.replication.factor", Kind: KindInt, Default: "1", Min: 1, Doc: "Accepted for compatibility; one node keeps one replica."},
	{Name: "auto.create.topics.enable", Kind: KindBool, Default: "true", Doc: "Create a topic on Metadata or Produce for an unknown name."},
	{Name: "delete.topic.enable", Kind: KindBool, Default: "true", Doc: "Allow DeleteTopics."},
	{Name: "log.segment.bytes", Kind: KindInt, Default: "1073741824", Min: 14, Doc: "Roll a segment at this size.", Topic: "segment.bytes"},
	{Name: "log.roll.ms", Kind: KindInt, Default: "604800000", Min: 1, Doc: "Roll a segment at this age.", Topic: "segment.ms"},
	{Name: "log.retention.ms", Kind: KindInt, Default: "604800000", Min: -1, Doc: "Delete segments older than this (-1: forever).", Topic: "retention.ms"},
	{Name: "log.retention.bytes", Kind: KindInt, Default: "-1", Min: -1, Doc: "Delete old segments past this partition size (-1: no limit).", Topic: "retention.bytes"},
	{Name: "log.retention.check.interval.ms", Kind: KindInt, Default: "300000", Min: 1, Doc: "How often retention runs."},
	{Name: "log.index.interval.bytes", Kind: KindInt, Default: "4096", Min: 0, Doc: "Bytes between offset-index entries.", Topic: "index.interval.bytes"},
	{Name: "log.index.size.max.bytes", Kind: KindInt, Default: "10485760", Min: 4, Doc: "Largest offset index per segment.", Topic: "segment.index.bytes"},
	{Name: "log.flush.interval.messages", Kind: KindInt, Default: maxLong, Min: 1, Doc: "fsync after this many messages; 1 = acknowledge acks=all only once fsynced.", Topic: "flush.messages"},
	{Name: "log.flush.interval.ms", Kind: KindInt, Default: "-1", Min: -1, Doc: "fsync at least this often (-1: left to the OS, as Kafka's default).", Topic: "flush.ms"},
	{Name: "num.recovery.threads.per.data.dir", Kind: KindInt, Default: "2", Min: 1, Doc: "Partitions opened (recovering their logs) at start-up and flushed and closed at shutdown at once (Kafka 4.0's default, KIP-1030)."},
	{Name: "message.max.bytes", Kind: KindInt, Default: "1048588", Min: 0, Doc: "Largest record batch a producer may send.", Topic: "max.message.bytes"},
	{Name: "log.message.timestamp.type", Kind: KindString, Default: "CreateTime", Doc: "CreateTime or LogAppendTime.", Topic: "message.timestamp.type"},
	{Name: "log.message.timestamp.before.max.ms", Kind: KindInt, Default: maxLong, Min: 0, Doc: "CreateTime topics: refuse records stamped more than this before the broker's clock (INVALID_TIMESTAMP).", Topic: "message.timestamp.before.max.ms"},
	{Name: "log.message.timestamp.after.max.ms", Kind: KindInt, Default: "3600000", Min: 0, Doc: "CreateTime topics: refuse records stamped more than this after the broker's clock (INVALID_TIMESTAMP; Kafka 4.0's default, KIP-1030).", Topic: "message.timestamp.after.max.ms"},
	{Name: "socket.request.max.bytes", Kind: KindInt, Default: "104857600", Min: 1, Doc: "Largest request frame; larger closes the connection."},
	{Name: "max.connections", Kind: KindInt, Default: "2147483647", Min: 1, Doc: "Open client connections at most; past it, a new connection waits, accepted but unread, until one closes (as Kafka)."},
	{Name: "max.connections.per.ip", Kind: KindInt, Default: "2147483647", Min: 0, Doc: "Open client connections per client IP at most (0: none, except the overrides', which must then be set); a connection over it is closed at once."},
	{Name: "max.connections.per.ip.overrides", Kind: KindString, Default: "", Check: checkConnectionOverrides, Doc: "Per-host or per-IP limits replacing max.connections.per.ip, as \"host:count,ip:count\"."},
	{Name: "connections.max.idle.ms", Kind: KindInt, Default: "600000", Min: 1, Doc: "Close connections idle, half-open (part of a request, then silence) or not reading their responses this long."},
	{Name: "queued.max.requests", Kind: KindInt, Default: "500", Min: 1, Doc: "Decoded requests waiting to be processed, across connections."},
	{Name: "fetch.max.bytes", Kind: KindInt, Default: "57671680", Min: 1024, Doc: "Largest Fetch response; a request's MaxBytes above it is lowered to it."},
	{Name: "producer.id.expiration.ms", Kind: KindInt, Default: "86400000", Min: 1, Doc: "Forget an idle producer's state after this long."},
	{Name: "producer.id.expiration.check.interval.ms", Kind: KindInt, Default: "600000", Min: 1, Doc: "How often idle producers are expired."},
	{Name: "transactional.id.expiration.ms", Kind: KindInt, Default: "604800000", Min: 1, Doc: "Forget an idle transactional id after this long."},
	{Name: "transaction.max.timeout.ms", Kind: KindInt, Default: "900000", Min: 1, Doc: "Largest transaction.timeout.ms a producer may ask for."},
	{Name: "group.min.session.timeout.ms", Kind: KindInt, Default: "6000", Min: 0, Doc: "Smallest consumer session timeout."},
	{Name: "group.max.session.timeout.ms", Kind: KindInt, Default: "1800000", Min: 0, Doc: "Largest consumer session timeout."},
	{Name: "group.initial.rebalance.delay.ms", Kind: KindInt, Default: "3000", Min: 0, Doc: "Wait for more members before the first rebalance of an empty group."},
	{Name: "offsets.retention.ms", Kind: KindInt, Default: "604800000", Min: 1, Doc: "Keep an empty group's committed offsets this long."},
}

// TopicDefaults maps topic-level names to the broker setting that gives
// their default, e.g. "retention.ms" → "log.retention.ms".
func TopicDefaults() map[string]string {
	m := map[string]string{}
	for _, s := range settings {
		if s.Topic != "" {
			m[s.Topic] = s.Name
		}
	}
	return m
}
