package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sort"
)

// dumpBatch is the part of a `minibroker dump-log --json --print-data`
// batch line the checks use.
type dumpBatch struct {
	Kind                 string `json:"kind"`
	BaseOffset           int64  `json:"base_offset"`
	LastOffset           int64  `json:"last_offset"`
	Count                int32  `json:"count"`
	Size                 int    `json:"size"`
	CRC                  uint32 `json:"crc"`
	CRCValid             bool   `json:"crc_valid"`
	Control              bool   `json:"control"`
	ProducerID           int64  `json:"producer_id"`
	ProducerEpoch        int16  `json:"producer_epoch"`
	BaseSequence         int32  `json:"base_sequence"`
	PartitionLeaderEpoch int32  `json:"partition_leader_epoch"`
	ControlRecord        *struct {
		Type           string `json:"type"`
		MirrorPidReset *struct {
			SourceClusterID string `json:"source_cluster_id"`
		} `json:"mirror_pid_reset"`
	} `json:"control_record"`
	Records []struct {
		Offset int64           `json:"offset"`
		Value  json.RawMessage `json:"value"`
	} `json:"records"`
}

// identity is what makes two copies of a batch the same bytes: the CRC
// covers attributes onward (producer id, epoch, sequence, records); base
// offset, size and leader epoch are the rest of the header.
func (b dumpBatch) identity() string {
	return fmt.Sprintf("offsets %d-%d size %d crc %08x leader-epoch %d", b.BaseOffset, b.LastOffset, b.Size, b.CRC, b.PartitionLeaderEpoch)
}

func (b dumpBatch) isBarrier() bool {
	return b.Control && b.ControlRecord != nil && b.ControlRecord.Type == "MIRROR_PID_RESET"
}

// readDump reads the batches of a dump-log --json file, in offset order.
func readDump(path string) ([]dumpBatch, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []dumpBatch
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for line := 1; sc.Scan(); line++ {
		var b dumpBatch
		if err := json.Unmarshal(sc.Bytes(), &b); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		if b.Kind == "batch" {
			out = append(out, b)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].BaseOffset < out[j].BaseOffset })
	return out, nil
}

// logFacts are the properties of one log the demo asserts.
type logFacts struct {
	Batches     int
	Records     int
	End         int64 // last offset + 1
	Gaps        []string
	SecondCopy  []string // a producer batch (id, epoch, sequence) stored twice
	BadCRC      int
	Barriers    []dumpBatch
	Values      numbers // numbered records, by number
	OtherValues int     // records whose value is not a number (stray writes)
}

func examine(batches []dumpBatch) logFacts {
	f := logFacts{Values: numbers{}}
	seen := map[string]int64{}
	for i, b := range batches {
		f.Batches++
		if !b.CRCValid {
			f.BadCRC++
		}
		if i > 0 && b.BaseOffset != batches[i-1].LastOffset+1 {
			f.Gaps = append(f.Gaps, fmt.Sprintf("offsets %d-%d missing", batches[i-1].LastOffset+1, b.BaseOffset-1))
		}
		f.End = b.LastOffset + 1
		if b.isBarrier() {
			f.Barriers = append(f.Barriers, b)
			// Producer ids start again after a failover (the other cluster
			// hands out the same ones): that is what the barrier is for.
			seen = map[string]int64{}
		}
		if !b.Control && b.ProducerID >= 0 {
			key := fmt.Sprintf("producer %d epoch %d sequence %d", b.ProducerID, b.ProducerEpoch, b.BaseSequence)
			if at, dup := seen[key]; dup {
				f.SecondCopy = append(f.SecondCopy, fmt.Sprintf("%s at offsets %d and %d", key, at, b.BaseOffset))
			}
			seen[key] = b.BaseOffset
		}
		if b.Control {
			continue
		}
		for _, r := range b.Records {
			f.Records++
			var s string
			if json.Unmarshal(r.Value, &s) == nil {
				var n int64
				if _, err := fmt.Sscanf(s, "%d", &n); err == nil && fmt.Sprint(n) == s {
					f.Values[n]++
					continue
				}
			}
			f.OtherValues++
		}
	}
	return f
}
