// Package fault is minibroker's fault registry: faults a user sets on a
// running broker (from the HTTP admin API, the CLI or minibrokertest) to
// test how their own code copes with a misbehaving Kafka. Request faults
// answer a Kafka API with an error code, delay it, or drop the connection
// instead of answering; a storage fault fails a partition's client writes
// with KAFKA_STORAGE_ERROR; link faults pause, slow or cut a mirror's
// connections to its source.
//
// Faults are deterministic: a request fault fires first on the Nth request
// it matches and then on the next Count matching requests (0: until
// cleared); a probabilistic fault draws from a generator seeded with its
// Seed, so the same seed and the same requests fire on the same ones.
//
// The registry is off unless the broker is started with faults.enable;
// nothing on the Kafka protocol can reach it.
package fault

import (
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Kind is what a fault does.
type Kind string

// The kinds of fault.
const (
	// Error answers requests of an API (naming a topic or partition, if
	// given) with ErrorCode.
	Error Kind = "error"
	// Latency delays requests of an API by Latency before they are served.
	Latency Kind = "latency"
	// Drop closes the connection instead of answering (the request is not
	// served).
	Drop Kind = "drop"
	// Storage fails client writes (Produce) to a topic's partitions (one
	// when Partition is set) with KAFKA_STORAGE_ERROR; nothing is appended.
	Storage Kind = "storage"
	// MirrorPause stalls a mirror's connections to its source: nothing is
	// read or written on them, and new ones wait to connect, until cleared.
	MirrorPause Kind = "mirror-pause"
	// MirrorThrottle limits what a mirror reads from its source to
	// BytesPerSecond.
	MirrorThrottle Kind = "mirror-throttle"
	// MirrorUnreachable cuts a mirror's connections to its source and
	// refuses new ones, as an unreachable host would.
	MirrorUnreachable Kind = "mirror-unreachable"
)

// Kinds lists every kind, for help texts.
var Kinds = []Kind{Error, Latency, Drop, Storage, MirrorPause, MirrorThrottle, MirrorUnreachable}

// Spec is a fault to set. API keys and error codes are Kafka's numbers.
type Spec struct {
	Kind Kind `json:"kind"`
	// APIKey selects the requests of one Kafka API (error, latency,
	// drop); nil for drop and latency means every API.
	APIKey *int16 `json:"api_key,omitempty"`
	// Topic and Partition narrow a request fault to requests that name
	// the topic (and partition); Storage requires Topic.
	Topic     string `json:"topic,omitempty"`
	Partition *int32 `json:"partition,omitempty"`
	// ErrorCode is the Kafka error code an Error fault answers with.
	ErrorCode int16 `json:"error_code,omitempty"`
	// LatencyMs is a Latency fault's delay.
	LatencyMs int64 `json:"latency_ms,omitempty"`
	// Mirror names the mirror of a link fault ("" = every mirror).
	Mirror string `json:"mirror,omitempty"`
	// BytesPerSecond is a MirrorThrottle's rate.
	BytesPerSecond int64 `json:"bytes_per_second,omitempty"`
	// Nth is the first matching request the fault fires on (1, the
	// next one, when 0).
	Nth int64 `json:"nth,omitempty"`
	// Count is how many matching requests it fires on, from the Nth
	// (0: every one until cleared). The fault expires after the last.
	Count int64 `json:"count,omitempty"`
	// Probability, in (0, 1), makes each matching request from the Nth
	// fire with that probability, drawn from a generator seeded with
	// Seed (a random seed, reported, when 0). 0 means always.
	Probability float64 `json:"probability,omitempty"`
	Seed        uint64  `json:"seed,omitempty"`
}

// Validate checks a spec before it is set.
func (s Spec) Validate() error {
	request := false
	switch s.Kind {
	case Error:
		request = true
		if s.APIKey == nil {
			return errors.New("fault: an error fault needs an API key")
		}
		if s.ErrorCode == 0 || kerr.ErrorForCode(s.ErrorCode) == kerr.UnknownServerError && s.ErrorCode != kerr.UnknownServerError.Code {
			return fmt.Errorf("fault: error code %d is not a Kafka error", s.ErrorCode)
		}
	case Latency:
		request = true
		if s.LatencyMs <= 0 || s.LatencyMs > int64(10*time.Minute/time.Millisecond) {
			return errors.New("fault: latency must be between 1 ms and 10 minutes")
		}
	case Drop:
		request = true
	case Storage:
		request = true
		if s.Topic == "" {
			return errors.New("fault: a storage fault needs a topic")
		}
		if s.APIKey != nil && *s.APIKey != 0 {
			return errors.New("fault: a storage fault fails Produce only")
		}
	case MirrorPause, MirrorUnreachable:
	case MirrorThrottle:
		if s.BytesPerSecond <= 0 {
			return errors.New("fault: a throttle needs bytes_per_second > 0")
		}
	default:
		return fmt.Errorf("fault: unknown kind %q (want one of %v)", s.Kind, Kinds)
	}
	if s.APIKey != nil && kmsg.RequestForKey(*s.APIKey) == nil {
		return fmt.Errorf("fault: unknown API key %d", *s.APIKey)
	}
	if s.Partition != nil && s.Topic == "" {
		return errors.New("fault: a partition needs its topic")
	}
	if s.Nth < 0 || s.Count < 0 {
		return errors.New("fault: nth and count must not be negative")
	}
	if s.Probability < 0 || s.Probability >= 1 {
		return errors.New("fault: probability must be in [0, 1) (0: always)")
	}
	if !request {
		if s.APIKey != nil || s.Topic != "" || s.Nth != 0 || s.Count != 0 || s.Probability != 0 {
			return fmt.Errorf("fault: %s takes a mirror only: api, topic, nth, count and probability apply to request faults", s.Kind)
		}
	} else if s.Mirror != "" || s.BytesPerSecond != 0 {
		return fmt.Errorf("fault: %s is a request fault: mirror and bytes_per_second apply to link faults", s.Kind)
	}
	return nil
}

// IsLink reports whether the kind acts on mirror links.
func (k Kind) IsLink() bool { return k == MirrorPause || k == MirrorThrottle || k == MirrorUnreachable }

// Status is a fault as listed: its spec, its id, and what it has done.
type Status struct {
	ID string `json:"id"`
	Spec
	// Matched counts the requests it matched, Fired those it acted on.
	Matched int64 `json:"matched"`
	Fired   int64 `json:"fired"`
	// Active is false once a counted fault has fired Count times.
	Active bool      `json:"active"`
	SetAt  time.Time `json:"set_at"`
}

// APIName is a key's Kafka name, or its number.
func APIName(key *int16) string {
	if key == nil {
		return "any"
	}
	if kmsg.RequestForKey(*key) != nil {
		return kmsg.NameForKey(*key)
	}
	return fmt.Sprint(*key)
}

// Describe is a one-line summary, for logs and the CLI.
func (s Status) Describe() string {
	target := ""
	if s.Topic != "" {
		target = " topic=" + s.Topic
		if s.Partition != nil {
			target += fmt.Sprintf(" partition=%d", *s.Partition)
		}
	}
	switch s.Kind {
	case Error:
		return fmt.Sprintf("%s api=%s%s error=%s", s.Kind, APIName(s.APIKey), target, kerr.ErrorForCode(s.ErrorCode).Error())
	case Latency:
		return fmt.Sprintf("%s api=%s%s latency=%dms", s.Kind, APIName(s.APIKey), target, s.LatencyMs)
	case Drop:
		return fmt.Sprintf("%s api=%s%s", s.Kind, APIName(s.APIKey), target)
	case Storage:
		return fmt.Sprintf("%s%s", s.Kind, target)
	case MirrorThrottle:
		return fmt.Sprintf("%s mirror=%s bytes_per_second=%d", s.Kind, mirrorName(s.Mirror), s.BytesPerSecond)
	default:
		return fmt.Sprintf("%s mirror=%s", s.Kind, mirrorName(s.Mirror))
	}
}

func mirrorName(m string) string {
	if m == "" {
		return "*"
	}
	return m
}
