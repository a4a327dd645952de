package logtool

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/batch"
)

// Control is the decoded (first) record of a control batch.
type Control struct {
	Type    batch.ControlType
	Version int16
	// Key and Value are the raw record key and value; they are shown for
	// types this package does not know and when decoding fails.
	Key, Value []byte
	// EndTxn is set for COMMIT and ABORT.
	EndTxn *kmsg.EndTxnMarker
	// MirrorPidReset is set for MIRROR_PID_RESET.
	MirrorPidReset *batch.MirrorPidResetRecord
	// Err says why the record or its value could not be decoded.
	Err error
}

// Known reports whether the control type is one this package decodes.
func (c *Control) Known() bool {
	switch c.Type {
	case batch.ControlAbort, batch.ControlCommit, batch.ControlMirrorPidReset:
		return true
	}
	return false
}

// IsBarrier reports whether b is a MIRROR_PID_RESET barrier as the
// partition and the PSM define it: a control batch, not transactional,
// whose control record is of type 7.
func IsBarrier(h *batch.Header, c *Control) bool {
	return h.IsControl() && !h.IsTransactional() && c != nil && c.Err == nil && c.Type == batch.ControlMirrorPidReset
}

// DecodeControl decodes the control record of a control batch, compressed
// or not. A batch with no records (emptied by compaction) returns nil.
func DecodeControl(b *Batch, maxBytes int) *Control {
	h := &b.Header
	if !h.IsControl() || b.Raw == nil || h.NumRecords == 0 {
		return nil
	}
	c := &Control{Type: -1, Version: -1}
	recs, err := DecodeRecords(b.Raw, h, maxBytes)
	if len(recs) == 0 {
		if err == nil {
			err = fmt.Errorf("%w: no control record", errRecords)
		}
		c.Err = err
		return c
	}
	c.Key, c.Value = recs[0].Key, recs[0].Value
	version, typ, ok := batch.ControlKey(c.Key)
	if !ok {
		c.Err = fmt.Errorf("control key of %d bytes, want 4", len(c.Key))
		return c
	}
	c.Version, c.Type = version, typ
	switch c.Type {
	case batch.ControlAbort, batch.ControlCommit:
		var m kmsg.EndTxnMarker
		if err := m.ReadFrom(c.Value); err != nil {
			c.Err = fmt.Errorf("end transaction marker: %w", err)
		} else {
			c.EndTxn = &m
		}
	case batch.ControlMirrorPidReset:
		var v batch.MirrorPidResetRecord
		if err := v.ReadFrom(c.Value); err != nil {
			c.Err = err
		} else {
			c.MirrorPidReset = &v
		}
	}
	return c
}
