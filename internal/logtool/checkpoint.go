package logtool

import (
	"fmt"
	"strings"
)

// Checkpoints are parsed by the log's own parser (log.ParseCheckpoint),
// which takes any version and Kafka's per data directory files, so the
// tools show files the broker would refuse as well as the ones it reads.

// MetadataField is one "name: value" line of Kafka's partition.metadata
// ("version: 0", "topic_id: <base64 uuid>").
type MetadataField struct{ Name, Value string }

// DecodePartitionMetadata parses Kafka's partition.metadata.
func DecodePartitionMetadata(data []byte) ([]MetadataField, error) {
	var out []MetadataField
	for i, line := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
		name, value, ok := strings.Cut(line, ":")
		if !ok || strings.TrimSpace(name) == "" {
			return nil, fmt.Errorf("line %d: %q is not name: value", i+1, line)
		}
		out = append(out, MetadataField{strings.TrimSpace(name), strings.TrimSpace(value)})
	}
	return out, nil
}
