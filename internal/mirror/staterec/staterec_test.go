package staterec

import (
	"math/rand/v2"
	"testing"
)

// Keys decode back to what they were made of; Describe prints the
// decoders' form, a tombstone <DELETE>, an unknown type skipped; random
// bytes decode without a panic.
func TestKeysAndDescribe(t *testing.T) {
	k, err := DecodeKey(PartitionKey("dr", "orders", 7))
	if err != nil || k != (Key{Type: TypePartition, Mirror: "dr", Topic: "orders", Partition: 7}) {
		t.Fatalf("partition key: %+v %v", k, err)
	}
	if k, err := DecodeKey(DefinitionKey("dr")); err != nil || k != (Key{Type: TypeDefinition, Mirror: "dr"}) {
		t.Fatalf("definition key: %+v %v", k, err)
	}
	if _, err := DecodeKey(append(DefinitionKey("dr"), 0)); err == nil {
		t.Fatal("a key with a trailing byte decodes")
	}
	key, payload := Describe(3, PartitionKey("dr", "orders", 7), Value([]byte(`{"state":"MIRRORING"}`)))
	if key != `{"type":"1001","data":{"mirror":"dr","topic":"orders","partition":7}}` ||
		payload != `{"version":"0","data":{"state":"MIRRORING"}}` {
		t.Fatalf("describe: %s %s", key, payload)
	}
	if key, payload := Describe(3, DefinitionKey("dr"), nil); key != `{"type":"1000","data":{"mirror":"dr"}}` || payload != "<DELETE>" {
		t.Fatalf("tombstone: %s %s", key, payload)
	}
	if key, payload := Describe(9, []byte{0, 3, 0, 1, 'g'}, []byte{0, 0}); key != "Unknown record type 3 at offset 9, skipping." || payload != "" {
		t.Fatalf("unknown type: %q %q", key, payload)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		key := make([]byte, r.IntN(16))
		for i := range key {
			key[i] = byte(r.UintN(256))
		}
		if len(key) >= 2 {
			key[0], key[1] = 0x03, byte(0xe8+r.IntN(2))
		}
		var value []byte
		if r.IntN(4) > 0 {
			value = make([]byte, r.IntN(20))
			for i := range value {
				value[i] = byte(r.UintN(256))
			}
		}
		Describe(0, key, value)
	}
}
