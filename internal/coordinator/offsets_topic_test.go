package coordinator

import "testing"

// TestPartitionFor: Kafka's partitionFor(groupId) with Java's
// String.hashCode over UTF-16 code units ("hello" is 99162322 in Java,
// "polygenelubricants" Integer.MIN_VALUE, which Utils.abs maps to 0;
// the expected partitions were computed independently of this code).
func TestPartitionFor(t *testing.T) {
	for _, c := range []struct {
		id   string
		hash int32
		p    int32
	}{
		{"hello", 99162322, 22},
		{"polygenelubricants", -2147483648, 0},
		{"Aa", 2112, 12},
		{"BB", 2112, 12},
		{"😀", 1772899, 49}, // a surrogate pair: two code units
		{"été", 227742, 42},
		{"my-consumer-group-zzzz", -305999452, 2},
		{"", 0, 0},
	} {
		if h := javaStringHash(c.id); h != c.hash {
			t.Errorf("hash(%q) = %d, want %d", c.id, h, c.hash)
		}
		if p := PartitionFor(c.id, 50); p != c.p {
			t.Errorf("PartitionFor(%q, 50) = %d, want %d", c.id, p, c.p)
		}
	}
}
