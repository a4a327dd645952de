package log

import "testing"

// The log's checkpoint readers are ParseCheckpoint plus the log's rules:
// a file whose layout parses is still refused when it breaks a rule, and
// a file the log writes reads back.
func TestCheckpointRulesOnSharedParser(t *testing.T) {
	offsetFiles := []struct {
		data   string
		layout bool // ParseCheckpoint accepts it
		log    bool // decodeOffsetFile accepts it
	}{
		{"0\n42\n", true, true},
		{"1\n42\n", true, false},       // a version the log does not write
		{"0\n-1\n", true, false},       // negative offset
		{"0\nx\n", false, false},       // not a number
		{"0\n", false, false},          // no offset line
		{"0\n1\nt 0 5\n", true, false}, // Kafka's per-directory list, not one offset
	}
	for _, c := range offsetFiles {
		_, perr := ParseCheckpoint([]byte(c.data), false)
		_, lerr := decodeOffsetFile([]byte(c.data))
		if (perr == nil) != c.layout || (lerr == nil) != c.log {
			t.Errorf("%q: parse err %v (want ok %v), log err %v (want ok %v)", c.data, perr, c.layout, lerr, c.log)
		}
	}
	epochFiles := []struct {
		data        string
		layout, log bool
	}{
		{string(encodeEpochCheckpoint([]EpochEntry{{0, 0}, {3, 1200}})), true, true},
		{"0\n0\n", true, true},
		{"0\n2\n3 10\n2 20\n", true, false},   // epochs decrease
		{"0\n2\n2 10\n3 10\n", true, false},   // offsets do not increase
		{"0\n1\n4294967296 0\n", true, false}, // epoch beyond int32
		{"1\n1\n0 0\n", true, false},          // version
		{"0\n2\n0 0\n", false, false},         // count
		{"0\n1\n0 0 0\n", false, false},       // three fields
	}
	for _, c := range epochFiles {
		_, perr := ParseCheckpoint([]byte(c.data), true)
		_, lerr := decodeEpochCheckpoint([]byte(c.data))
		if (perr == nil) != c.layout || (lerr == nil) != c.log {
			t.Errorf("%q: parse err %v (want ok %v), log err %v (want ok %v)", c.data, perr, c.layout, lerr, c.log)
		}
	}
}
