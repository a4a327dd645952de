package broker

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestAlterRefusesDuplicateResources: a topic named twice in one
// AlterConfigs or IncrementalAlterConfigs request gets INVALID_REQUEST in
// both entries and is not changed; another topic of the same request is.
func TestAlterRefusesDuplicateResources(t *testing.T) {
	b, cl := startSeamed(t, nil)
	for _, name := range []string{"dup", "other"} {
		if _, err := b.CreateTopic(name, 1, nil, [16]byte{}, false); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	val := "60000"
	inc := kmsg.NewPtrIncrementalAlterConfigsRequest()
	legacy := kmsg.NewPtrAlterConfigsRequest()
	for _, name := range []string{"dup", "other", "dup"} {
		r := kmsg.NewIncrementalAlterConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, name
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value, c.Op = "retention.ms", &val, kmsg.IncrementalAlterConfigOpSet
		r.Configs = append(r.Configs, c)
		inc.Resources = append(inc.Resources, r)
		l := kmsg.NewAlterConfigsRequestResource()
		l.ResourceType, l.ResourceName = kmsg.ConfigResourceTypeTopic, name
		lc := kmsg.NewAlterConfigsRequestResourceConfig()
		lc.Name, lc.Value = "retention.ms", &val
		l.Configs = append(l.Configs, lc)
		legacy.Resources = append(legacy.Resources, l)
	}
	check := func(api string, codes []int16) {
		want := []int16{kerr.InvalidRequest.Code, 0, kerr.InvalidRequest.Code}
		for i := range want {
			if i >= len(codes) || codes[i] != want[i] {
				t.Fatalf("%s: codes %v, want %v", api, codes, want)
			}
		}
		if v := b.topicConfigValue(t, "dup", "retention.ms"); v == val {
			t.Fatalf("%s: the duplicated topic was altered", api)
		}
	}
	ir, err := inc.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	var codes []int16
	for _, r := range ir.Resources {
		codes = append(codes, r.ErrorCode)
	}
	check("IncrementalAlterConfigs", codes)
	lr, err := legacy.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	codes = codes[:0]
	for _, r := range lr.Resources {
		codes = append(codes, r.ErrorCode)
	}
	check("AlterConfigs", codes)
	if v := b.topicConfigValue(t, "other", "retention.ms"); v != val {
		t.Fatalf("the other topic's retention.ms is %q, want %s", v, val)
	}
}

// topicConfigValue is a topic's override of key ("" when none).
func (b *Broker) topicConfigValue(t *testing.T, topic, key string) string {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	tp, ok := b.topics[topic]
	if !ok {
		t.Fatalf("no topic %s", topic)
	}
	return tp.Configs[key]
}
