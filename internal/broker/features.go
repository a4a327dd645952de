package broker

// KIP-584 features: what ApiVersions v3+ lists as supported and finalized,
// and what UpdateFeatures (57) changes.
//
// minibroker serves one feature, transaction.version (KIP-890), supported
// 0–2 and finalized at 2 on a new data directory, as a Kafka 4 cluster
// formatted at its latest release. UpdateFeatures (kadm's UpdateFeatures,
// kafka-features.sh) changes the level, 0–2, durably: features.json in
// the data directory. Kafka sets a lower level when the storage is
// formatted (kafka-storage format --feature transaction.version=1) or
// later with UpdateFeatures; minibroker has no format step, so
// UpdateFeatures is the way. The level only tells clients which protocol
// to use (a client sees transaction.version 2 finalized and sends
// Produce v12, EndTxn v5, TxnOffsetCommit v5); requests are served by
// their version whatever the level, as Kafka serves them (txn_tv2.go in
// internal/coordinator). Kafka lists a finalized feature only above level
// 0, with both levels at it; so does minibroker.
//
// Deviation: Kafka also lists metadata.version, kraft.version,
// group.version and eligible.leader.replicas.version; minibroker has no
// metadata log, so it lists only what it serves. With
// client.protocol.version=3.9 no feature is listed (Kafka 3.9 did not
// serve transaction version 2, and EndTxn v5 is not served then).
//
// features.json: {"version":1,"epoch":N,"levels":{"transaction.version":L}};
// epoch is the FinalizedFeaturesEpoch, bumped on every change (Kafka's is
// the metadata offset of the last change).

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/vfs"
)

const (
	featuresFile              = "features.json"
	featureTransactionVersion = "transaction.version"
)

// supportedFeatures are the features served: their supported range and
// the level a new data directory finalizes.
var supportedFeatures = map[string]struct{ min, max, initial int16 }{
	featureTransactionVersion: {0, 2, 2},
}

type featuresDoc struct {
	Version int              `json:"version"`
	Epoch   int64            `json:"epoch"`
	Levels  map[string]int16 `json:"levels"`
}

// features are the finalized levels.
type features struct {
	fs  vfs.FS
	dir string

	mu     sync.Mutex // guards the fields below; held across the file write
	epoch  int64
	levels map[string]int16
}

func (f *features) open(fs vfs.FS, dir string) error {
	f.fs, f.dir = fs, dir
	f.levels = map[string]int16{}
	for name, s := range supportedFeatures {
		f.levels[name] = s.initial
	}
	raw, err := vfs.ReadFile(fs, filepath.Join(dir, featuresFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", featuresFile, err)
	}
	var doc featuresDoc
	if err := json.Unmarshal(raw, &doc); err != nil {
		return fmt.Errorf("parse %s: %w", featuresFile, err)
	}
	if doc.Version != 1 {
		return fmt.Errorf("%s: unknown version %d", featuresFile, doc.Version)
	}
	for name, level := range doc.Levels {
		s, ok := supportedFeatures[name]
		if !ok || level < s.min || level > s.max {
			return fmt.Errorf("%s: %s at level %d is not supported", featuresFile, name, level)
		}
		f.levels[name] = level
	}
	f.epoch = doc.Epoch
	return nil
}

// level is a feature's finalized level (0 for one not served).
func (f *features) level(name string) int16 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.levels[name]
}

// set finalizes levels durably (validated by the caller).
func (f *features) set(levels map[string]int16) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	next := map[string]int16{}
	for k, v := range f.levels {
		next[k] = v
	}
	changed := false
	for k, v := range levels {
		if _, ok := supportedFeatures[k]; ok && next[k] != v {
			next[k], changed = v, true
		}
	}
	if !changed {
		return nil
	}
	doc := featuresDoc{Version: 1, Epoch: f.epoch + 1, Levels: next}
	raw, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	if err := vfs.WriteFileAtomic(f.fs, f.dir, filepath.Join(f.dir, featuresFile), raw); err != nil {
		return fmt.Errorf("write %s: %w", featuresFile, err)
	}
	f.levels, f.epoch = next, doc.Epoch
	return nil
}

// fill sets the features of an ApiVersions v3+ answer.
func (f *features) fill(resp *kmsg.ApiVersionsResponse) {
	names := make([]string, 0, len(supportedFeatures))
	for name := range supportedFeatures {
		names = append(names, name)
	}
	sort.Strings(names)
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, name := range names {
		s := supportedFeatures[name]
		sf := kmsg.NewApiVersionsResponseSupportedFeature()
		sf.Name, sf.MinVersion, sf.MaxVersion = name, s.min, s.max
		resp.SupportedFeatures = append(resp.SupportedFeatures, sf)
		if level := f.levels[name]; level > 0 {
			ff := kmsg.NewApiVersionsResponseFinalizedFeature()
			ff.Name, ff.MinVersionLevel, ff.MaxVersionLevel = name, level, level
			resp.FinalizedFeatures = append(resp.FinalizedFeatures, ff)
		}
	}
	resp.FinalizedFeaturesEpoch = f.epoch
}
