package broker

import (
	"testing"

	"github.com/minibroker/minibroker/internal/config"
)

// TestKafka39RangesCoverEveryAPI: every API of Kafka 4's table has Kafka
// 3.9's range or is listed as new in Kafka 4, so an API added later is
// not silently dropped (or served at a version Kafka 3.9 lacked) with
// client.protocol.version=3.9; and the 3.9 table is Kafka 4's with the
// ranges remapped.
func TestKafka39RangesCoverEveryAPI(t *testing.T) {
	k4 := (&Broker{}).kafka4APIs()
	for key := range k4 {
		if _, ok := kafka39Ranges[key]; !ok && !newInKafka4[key] {
			t.Errorf("API %d is served but neither in kafka39Ranges nor in newInKafka4", key)
		}
	}
	cfg := config.Default()
	if err := cfg.Set("client.protocol.version", "3.9"); err != nil {
		t.Fatal(err)
	}
	k39 := (&Broker{cfg: cfg}).apis()
	for key, a := range k4 {
		b, ok := k39[key]
		if newInKafka4[key] {
			if ok {
				t.Errorf("API %d is new in Kafka 4 but served with 3.9", key)
			}
			continue
		}
		r := kafka39Ranges[key]
		if !ok || b.min != r[0] || b.max != min(a.max, r[1]) {
			t.Errorf("API %d with 3.9: v%d–v%d, want v%d–v%d", key, b.min, b.max, r[0], min(a.max, r[1]))
		}
	}
}
