package logtool

import (
	"fmt"
	"strconv"
	"strings"
)

// Checkpoint is a decoded text checkpoint file. Formats:
//
//	leader-epoch-checkpoint   version, count, then "epoch startOffset" lines
//	log-start-offset,         version, then one offset (minibroker keeps
//	recovery-point,           these per partition)
//	clean-shutdown
//	recovery-point-offset-checkpoint, log-start-offset-checkpoint, …
//	                          version, count, then "topic partition offset"
//	                          lines (Kafka's per data directory files)
type Checkpoint struct {
	Version int
	// Offset is set for the single-offset files.
	Offset *int64
	// Entries holds the lines after the count, split into fields.
	Entries [][]string
}

// DecodeCheckpoint parses a checkpoint; it accepts any of the layouts
// above and checks the count and the numbers.
func DecodeCheckpoint(data []byte, kind Kind) (*Checkpoint, error) {
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) < 2 {
		return nil, fmt.Errorf("%d lines, want at least 2", len(lines))
	}
	v, err := strconv.Atoi(strings.TrimSpace(lines[0]))
	if err != nil {
		return nil, fmt.Errorf("version line %q", lines[0])
	}
	c := &Checkpoint{Version: v}
	if kind == KindOffsetCheckpoint && len(lines) == 2 {
		off, err := strconv.ParseInt(strings.TrimSpace(lines[1]), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("offset line %q", lines[1])
		}
		c.Offset = &off
		return c, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(lines[1]))
	if err != nil || n != len(lines)-2 {
		return nil, fmt.Errorf("count line %q for %d entries", lines[1], len(lines)-2)
	}
	width := 3
	if kind == KindEpochCheckpoint {
		width = 2
	}
	for i, line := range lines[2:] {
		f := strings.Fields(line)
		if len(f) != width {
			return nil, fmt.Errorf("entry %d: %q has %d fields, want %d", i, line, len(f), width)
		}
		for _, num := range f[width-2:] {
			if _, err := strconv.ParseInt(num, 10, 64); err != nil {
				return nil, fmt.Errorf("entry %d: %q is not a number", i, num)
			}
		}
		c.Entries = append(c.Entries, f)
	}
	return c, nil
}

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
