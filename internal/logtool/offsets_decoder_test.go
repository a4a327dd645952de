package logtool

import (
	"math/rand"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestDecodeOffsetsRecord: a group's metadata as Kafka's JSON converter
// writes it (nullable strings null, v3's groupInstanceId, bytes base64),
// an unknown key type, a KIP-848 record, and random bytes decode without
// a panic.
func TestDecodeOffsetsRecord(t *testing.T) {
	k := kmsg.GroupMetadataKey{Version: 2, Group: "g"}
	v := kmsg.GroupMetadataValue{Version: 3, ProtocolType: "consumer", Generation: 4, CurrentStateTimestamp: 99,
		Members: []kmsg.GroupMetadataValueMember{{MemberID: "m1", ClientID: "c", ClientHost: "/h", RebalanceTimeoutMillis: 10,
			SessionTimeoutMillis: 20, Subscription: []byte{1}, Assignment: []byte{}}}}
	key, payload := DecodeOffsetsRecord(5, k.AppendTo(nil), v.AppendTo(nil))
	if key != `{"type":"2","data":{"group":"g"}}` {
		t.Fatalf("key %s", key)
	}
	want := `{"version":"3","data":{"protocolType":"consumer","generation":4,"protocol":null,"leader":null,"currentStateTimestamp":99,` +
		`"members":[{"memberId":"m1","groupInstanceId":null,"clientId":"c","clientHost":"/h","rebalanceTimeout":10,"sessionTimeout":20,"subscription":"AQ==","assignment":""}]}}`
	if payload != want {
		t.Fatalf("payload\n%s\nwant\n%s", payload, want)
	}
	if key, payload := DecodeOffsetsRecord(9, []byte{0, 4, 0, 1, 'g'}, []byte{0, 0}); !strings.HasPrefix(key, "Unknown record type 4 at offset 9") || payload != "" {
		t.Fatalf("unknown type: %q %q", key, payload)
	}
	// A KIP-848 record (ConsumerGroupMetadata: key 3, value v0 with the
	// epoch and no tagged field), its tombstone, and a value cut short.
	key, payload = DecodeOffsetsRecord(10, []byte{0, 3, 0, 1, 'g'}, []byte{0, 0, 0, 0, 0, 5, 0})
	if key != `{"type":"3","data":{"groupId":"g"}}` || payload != `{"version":"0","data":{"epoch":5}}` {
		t.Fatalf("consumer group metadata: %s %s", key, payload)
	}
	if key, payload = DecodeOffsetsRecord(11, []byte{0, 3, 0, 1, 'g'}, nil); payload != "<DELETE>" {
		t.Fatalf("tombstone: %s %s", key, payload)
	}
	if key, _ = DecodeOffsetsRecord(12, []byte{0, 3, 0, 1, 'g'}, []byte{0, 0, 0, 0}); !strings.HasPrefix(key, "Error at offset 12") {
		t.Fatalf("short value: %s", key)
	}
	r := rand.New(rand.NewSource(1))
	for range 20000 {
		key := make([]byte, r.Intn(12))
		r.Read(key)
		if len(key) >= 2 {
			key[0], key[1] = 0, byte(r.Intn(17))
		}
		var value []byte
		if r.Intn(4) > 0 {
			value = make([]byte, r.Intn(40))
			r.Read(value)
		}
		DecodeOffsetsRecord(0, key, value)
	}
}
