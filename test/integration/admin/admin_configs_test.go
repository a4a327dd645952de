package admin

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/minibrokertest"
)

// DescribeTopicPartitions pages through topics and partitions with its
// cursor at a response partition limit: every partition once, in order,
// each with this node as leader and only replica; a named unknown topic is
// UNKNOWN_TOPIC_OR_PARTITION; a cursor on a topic not named is
// INVALID_REQUEST.
func TestDescribeTopicPartitionsCursor(t *testing.T) {
	t.Parallel()
	c := minibrokertest.Start(t, minibrokertest.Topic("dtp-a", 5), minibrokertest.Topic("dtp-b", 3), minibrokertest.Topic("dtp-c", 1))
	cl := itest.NewClient(t, c.Addr())
	node := c.Broker().NodeID()
	var seen []string
	// The internal topics (__consumer_offsets, __mirror_state,
	// __transaction_state) sort
	// first: the walk starts past them, at dtp-a.
	cursor := &kmsg.DescribeTopicPartitionsRequestCursor{Topic: "dtp-a"}
	pages := 0
	for {
		req := kmsg.NewPtrDescribeTopicPartitionsRequest()
		req.ResponsePartitionLimit = 2
		req.Cursor = cursor
		resp, err := req.RequestWith(adminCtx(t), cl)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, tp := range resp.Topics {
			if tp.ErrorCode != 0 || tp.TopicID == ([16]byte{}) {
				t.Fatalf("topic %v: code %d id %x", tp.Topic, tp.ErrorCode, tp.TopicID)
			}
			for _, p := range tp.Partitions {
				if p.LeaderID != node || !slices.Equal(p.Replicas, []int32{node}) || !slices.Equal(p.ISR, []int32{node}) {
					t.Fatalf("%s-%d: %+v", *tp.Topic, p.Partition, p)
				}
				seen = append(seen, fmt.Sprintf("%s-%d", *tp.Topic, p.Partition))
			}
		}
		if resp.NextCursor == nil {
			break
		}
		cursor = &kmsg.DescribeTopicPartitionsRequestCursor{Topic: resp.NextCursor.Topic, Partition: resp.NextCursor.Partition}
		if pages > 20 {
			t.Fatal("the cursor never ends")
		}
	}
	want := "dtp-a-0 dtp-a-1 dtp-a-2 dtp-a-3 dtp-a-4 dtp-b-0 dtp-b-1 dtp-b-2 dtp-c-0"
	if got := strings.Join(seen, " "); got != want || pages != 5 {
		t.Fatalf("%d pages: %s, want 5: %s", pages, got, want)
	}

	req := kmsg.NewPtrDescribeTopicPartitionsRequest()
	req.ResponsePartitionLimit = 100
	req.Topics = []kmsg.DescribeTopicPartitionsRequestTopic{{Topic: "dtp-c"}, {Topic: "dtp-none"}}
	resp, err := req.RequestWith(adminCtx(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Topics) != 2 || resp.Topics[0].ErrorCode != 0 || *resp.Topics[1].Topic != "dtp-none" ||
		resp.Topics[1].ErrorCode != kerr.UnknownTopicOrPartition.Code || resp.NextCursor != nil {
		t.Fatalf("named: %+v", resp)
	}
	req.Cursor = &kmsg.DescribeTopicPartitionsRequestCursor{Topic: "dtp-a"}
	if resp, err = req.RequestWith(adminCtx(t), cl); err != nil {
		t.Fatal(err)
	}
	for _, tp := range resp.Topics {
		if tp.ErrorCode != kerr.InvalidRequest.Code {
			t.Fatalf("cursor outside the named topics: %+v", resp.Topics)
		}
	}
}

// GROUP config resources (Kafka 4's group configs) over raw kmsg (kadm
// has no group-config helper): every config described with its default,
// a valid change stored and described as GROUP_CONFIG, kept across a
// restart, listed by ListConfigResources and read by the group
// coordinator's accessor; out-of-range values, a session timeout not
// above the heartbeat interval and unknown names are INVALID_CONFIG and
// change nothing; validate-only changes nothing.
func TestGroupConfigsDescribeAlterPersist(t *testing.T) {
	t.Parallel()
	c := minibrokertest.Start(t)
	cl := itest.NewClient(t, c.Addr())
	describe := func(group string) map[string]kmsg.DescribeConfigsResponseResourceConfig {
		t.Helper()
		req := kmsg.NewPtrDescribeConfigsRequest()
		req.Resources = []kmsg.DescribeConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeGroupConfig, ResourceName: group}}
		resp, err := req.RequestWith(adminCtx(t), cl)
		if err != nil {
			t.Fatal(err)
		}
		if code := resp.Resources[0].ErrorCode; code != 0 {
			t.Fatalf("describe %s: code %d", group, code)
		}
		out := map[string]kmsg.DescribeConfigsResponseResourceConfig{}
		for _, cfg := range resp.Resources[0].Configs {
			out[cfg.Name] = cfg
		}
		return out
	}
	d := describe("g1")
	if v := d["consumer.session.timeout.ms"]; *v.Value != "45000" || v.Source != kmsg.ConfigSourceDefaultConfig {
		t.Fatalf("default session timeout: %+v", v)
	}
	if len(d) != 10 {
		t.Fatalf("%d group configs described, want Kafka's 10", len(d))
	}
	alter := func(validateOnly bool, kv ...string) int16 {
		t.Helper()
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		req.ValidateOnly = validateOnly
		rr := kmsg.IncrementalAlterConfigsRequestResource{ResourceType: kmsg.ConfigResourceTypeGroupConfig, ResourceName: "g1"}
		for i := 0; i < len(kv); i += 2 {
			rr.Configs = append(rr.Configs, kmsg.IncrementalAlterConfigsRequestResourceConfig{
				Op: kmsg.IncrementalAlterConfigOpSet, Name: kv[i], Value: kmsg.StringPtr(kv[i+1])})
		}
		req.Resources = append(req.Resources, rr)
		resp, err := req.RequestWith(adminCtx(t), cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Resources[0].ErrorCode
	}
	for _, bad := range [][]string{
		{"consumer.session.timeout.ms", "1000"},
		{"consumer.session.timeout.ms", "90000"},
		{"consumer.heartbeat.interval.ms", "abc"},
		{"share.record.lock.duration.ms", "14999"},
		{"share.auto.offset.reset", "sometimes"},
		{"share.isolation.level", "dirty"},
		{"no.such.config", "1"},
		{"streams.num.standby.replicas", "3"},
	} {
		if code := alter(false, bad...); code != kerr.InvalidConfig.Code {
			t.Errorf("%v: code %d, want INVALID_CONFIG", bad, code)
		}
	}
	if code := alter(true, "consumer.session.timeout.ms", "50000"); code != 0 {
		t.Fatalf("validate only: code %d", code)
	}
	if v := describe("g1")["consumer.session.timeout.ms"]; *v.Value != "45000" {
		t.Fatalf("after refused and validate-only changes: %s", *v.Value)
	}
	if code := alter(false, "consumer.session.timeout.ms", "50000", "share.auto.offset.reset", "by_duration:PT1H30M"); code != 0 {
		t.Fatalf("valid change: code %d", code)
	}
	c.Restart()
	cl = itest.NewClient(t, c.Addr())
	d = describe("g1")
	if v := d["consumer.session.timeout.ms"]; *v.Value != "50000" || v.Source != kmsg.ConfigSourceGroupConfig {
		t.Fatalf("after restart: %+v", v)
	}
	if v := d["share.auto.offset.reset"]; *v.Value != "by_duration:PT1H30M" {
		t.Fatalf("after restart: %+v", v)
	}
	if got := c.Broker().GroupConfigs("g1")["consumer.session.timeout.ms"]; got != "50000" {
		t.Fatalf("GroupConfigs (the coordinator's view): %s", got)
	}
	listed, err := kadm.NewClient(cl).ListConfigResources(adminCtx(t), kadm.ConfigResourceType(kmsg.ConfigResourceTypeGroupConfig))
	if err != nil {
		t.Fatal(err)
	}
	if names := listed.Names(); len(names) != 1 || names[0] != "g1" {
		t.Fatalf("listed groups: %+v", listed)
	}
}

// CLIENT_METRICS resources and ListConfigResources v0/v1 over raw kmsg:
// a subscription is created with IncrementalAlterConfigs (APPEND on its
// metrics list), described as CLIENT_METRICS_CONFIG and listed; an
// interval out of 100–3600000 and an unknown name are INVALID_REQUEST,
// a bad match pattern INVALID_CONFIG; v1 lists topics, this broker and
// the subscription; an unsupported type is UNSUPPORTED_VERSION.
func TestClientMetricsResources(t *testing.T) {
	t.Parallel()
	c := minibrokertest.Start(t, minibrokertest.Topic("cm-t", 1))
	cl := itest.NewClient(t, c.Addr())
	alter := func(name string, ops ...kmsg.IncrementalAlterConfigsRequestResourceConfig) int16 {
		t.Helper()
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		req.Resources = []kmsg.IncrementalAlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeClientMetrics, ResourceName: name, Configs: ops}}
		resp, err := req.RequestWith(adminCtx(t), cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Resources[0].ErrorCode
	}
	op := func(o kmsg.IncrementalAlterConfigOp, name, value string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
		return kmsg.IncrementalAlterConfigsRequestResourceConfig{Op: o, Name: name, Value: kmsg.StringPtr(value)}
	}
	set, appendOp := kmsg.IncrementalAlterConfigOpSet, kmsg.IncrementalAlterConfigOpAppend
	for _, tc := range []struct {
		op   kmsg.IncrementalAlterConfigsRequestResourceConfig
		want int16
	}{
		{op(set, "interval.ms", "50"), kerr.InvalidRequest.Code},
		{op(set, "interval.ms", "x"), kerr.InvalidConfig.Code},
		{op(set, "colour", "blue"), kerr.InvalidRequest.Code},
		{op(set, "match", "client_colour=blue"), kerr.InvalidConfig.Code},
		{op(set, "match", "client_id=("), kerr.InvalidConfig.Code},
	} {
		if got := alter("sub1", tc.op); got != tc.want {
			t.Errorf("%s=%s: code %d, want %d", tc.op.Name, *tc.op.Value, got, tc.want)
		}
	}
	if got := alter("sub1", op(set, "interval.ms", "1000"), op(appendOp, "metrics", "org.apache.kafka.producer."),
		op(set, "match", "client_software_name=kgo")); got != 0 {
		t.Fatalf("valid subscription: code %d", got)
	}
	if got := alter("sub1", op(appendOp, "metrics", "org.apache.kafka.consumer.")); got != 0 {
		t.Fatalf("append: code %d", got)
	}
	dreq := kmsg.NewPtrDescribeConfigsRequest()
	dreq.Resources = []kmsg.DescribeConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeClientMetrics, ResourceName: "sub1"}}
	dresp, err := dreq.RequestWith(adminCtx(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, cfg := range dresp.Resources[0].Configs {
		if cfg.Source == kmsg.ConfigSourceClientMetricsConfig {
			got[cfg.Name] = *cfg.Value
		}
	}
	if got["interval.ms"] != "1000" || got["metrics"] != "org.apache.kafka.producer.,org.apache.kafka.consumer." || got["match"] != "client_software_name=kgo" {
		t.Fatalf("described: %v", got)
	}

	list := func(v int16, types ...int8) *kmsg.ListConfigResourcesResponse {
		t.Helper()
		req := kmsg.NewPtrListConfigResourcesRequest()
		req.ResourceTypes = types
		resp, err := kgoRequestAt(t, cl, req, v)
		if err != nil {
			t.Fatal(err)
		}
		return resp.(*kmsg.ListConfigResourcesResponse)
	}
	if r := list(0); r.ErrorCode != 0 || len(r.ConfigResources) != 1 || r.ConfigResources[0].Name != "sub1" {
		t.Fatalf("v0: %+v", r)
	}
	r := list(1)
	var names []string
	for _, cr := range r.ConfigResources {
		names = append(names, fmt.Sprintf("%d:%s", cr.Type, cr.Name))
	}
	node := fmt.Sprint(c.Broker().NodeID())
	if want := "2:__consumer_offsets 2:__mirror_state 2:__share_group_state 2:__transaction_state 2:cm-t 4:" + node + " 8:" + node + " 16:sub1"; strings.Join(names, " ") != want {
		t.Fatalf("v1 all: %v, want %s", names, want)
	}
	if r := list(1, 3); r.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("v1 type 3 (unknown): code %d", r.ErrorCode)
	}
}

// GetTelemetrySubscriptions and PushTelemetry as a broker with no
// client-metrics subscriptions: a new client instance id, no metrics
// asked for, Kafka's defaults; a push with the subscription id is
// accepted (the first after a Get), a second at once is throttled, a
// wrong subscription id UNKNOWN_SUBSCRIPTION_ID, a zero instance id
// INVALID_REQUEST, and a Get right after a Get throttled.
func TestTelemetryNoSubscriptions(t *testing.T) {
	t.Parallel()
	c := minibrokertest.Start(t)
	cl := itest.NewClient(t, c.Addr())
	get := kmsg.NewPtrGetTelemetrySubscriptionsRequest()
	sub, err := get.RequestWith(adminCtx(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	if sub.ErrorCode != 0 || sub.ClientInstanceID == ([16]byte{}) || len(sub.RequestedMetrics) != 0 ||
		sub.PushIntervalMillis != 300000 || sub.TelemetryMaxBytes != 1<<20 || !sub.DeltaTemporality ||
		!slices.Equal(sub.AcceptedCompressionTypes, []int8{4, 3, 1, 2}) {
		t.Fatalf("subscription: %+v", sub)
	}
	push := func(id [16]byte, subID int32) int16 {
		t.Helper()
		req := kmsg.NewPtrPushTelemetryRequest()
		req.ClientInstanceID, req.SubscriptionID = id, subID
		req.Metrics = []byte("ignored")
		resp, err := req.RequestWith(adminCtx(t), cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.ErrorCode
	}
	if code := push(sub.ClientInstanceID, sub.SubscriptionID+1); code != kerr.UnknownSubscriptionID.Code {
		t.Fatalf("wrong subscription id: code %d", code)
	}
	// After UNKNOWN_SUBSCRIPTION_ID a Get is let through at once.
	get.ClientInstanceID = sub.ClientInstanceID
	again, err := get.RequestWith(adminCtx(t), cl)
	if err != nil || again.ErrorCode != 0 || again.ClientInstanceID != sub.ClientInstanceID || again.SubscriptionID != sub.SubscriptionID {
		t.Fatalf("get after an unknown subscription: %+v %v", again, err)
	}
	if code := push(sub.ClientInstanceID, sub.SubscriptionID); code != 0 {
		t.Fatalf("push: code %d", code)
	}
	if code := push(sub.ClientInstanceID, sub.SubscriptionID); code != kerr.ThrottlingQuotaExceeded.Code {
		t.Fatalf("second push at once: code %d, want THROTTLING_QUOTA_EXCEEDED", code)
	}
	if code := push([16]byte{}, sub.SubscriptionID); code != kerr.InvalidRequest.Code {
		t.Fatalf("zero instance id: code %d", code)
	}
	third, err := get.RequestWith(adminCtx(t), cl)
	if err != nil || third.ErrorCode != kerr.ThrottlingQuotaExceeded.Code {
		t.Fatalf("get within the push interval: %+v %v", third, err)
	}
}
