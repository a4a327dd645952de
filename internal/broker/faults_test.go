package broker

import (
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

const code = int16(16) // NOT_COORDINATOR: any code does

// Every served API, at every version it is served at, gets an error
// answer that encodes and decodes, with the code in its own error field
// where it has one (Fetch's is about sessions and stays 0).
func TestErrorResponseEveryAPI(t *testing.T) {
	b := &Broker{}
	for key, a := range b.apis() {
		for v := a.min; v <= a.max; v++ {
			req := kmsg.RequestForKey(key)
			req.SetVersion(v)
			resp := errorResponse(req, code)
			raw := resp.AppendTo(nil)
			back := req.ResponseKind()
			back.SetVersion(v)
			if err := back.ReadFrom(raw); err != nil {
				t.Fatalf("%s v%d: error answer does not decode: %v", kmsg.NameForKey(key), v, err)
			}
			if f := reflect.ValueOf(resp).Elem().FieldByName("ErrorCode"); f.IsValid() && key != 1 {
				if int16(f.Int()) != code {
					t.Errorf("%s v%d: top-level error %d, want %d", kmsg.NameForKey(key), v, f.Int(), code)
				}
			}
		}
	}
}

func TestErrorResponseShapes(t *testing.T) {
	id := [16]byte{1, 2, 3}
	t.Run("Produce", func(t *testing.T) {
		req := kmsg.NewPtrProduceRequest()
		req.Version = 9
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "t"
		for _, p := range []int32{0, 1} {
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Partition = p
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		resp := errorResponse(req, code).(*kmsg.ProduceResponse)
		if len(resp.Topics) != 1 || resp.Topics[0].Topic != "t" || len(resp.Topics[0].Partitions) != 2 {
			t.Fatalf("%+v", resp)
		}
		for i, p := range resp.Topics[0].Partitions {
			if p.Partition != int32(i) || p.ErrorCode != code || p.BaseOffset != -1 {
				t.Fatalf("partition %+v", p)
			}
		}
	})
	t.Run("Fetch by topic id", func(t *testing.T) {
		req := kmsg.NewPtrFetchRequest()
		req.Version = 13
		rt := kmsg.NewFetchRequestTopic()
		rt.TopicID = id
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition = 3
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp := errorResponse(req, code).(*kmsg.FetchResponse)
		if resp.ErrorCode != 0 || len(resp.Topics) != 1 || resp.Topics[0].TopicID != id ||
			resp.Topics[0].Partitions[0].Partition != 3 || resp.Topics[0].Partitions[0].ErrorCode != code ||
			resp.Topics[0].Partitions[0].HighWatermark != -1 {
			t.Fatalf("%+v", resp)
		}
	})
	t.Run("FindCoordinator v4", func(t *testing.T) {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.Version = 4
		req.CoordinatorKeys = []string{"g1", "g2"}
		resp := errorResponse(req, code).(*kmsg.FindCoordinatorResponse)
		if len(resp.Coordinators) != 2 || resp.Coordinators[1].Key != "g2" || resp.Coordinators[1].ErrorCode != code {
			t.Fatalf("%+v", resp)
		}
	})
	t.Run("DeleteTopics by name list", func(t *testing.T) {
		req := kmsg.NewPtrDeleteTopicsRequest()
		req.Version = 1
		req.TopicNames = []string{"a", "b"}
		resp := errorResponse(req, code).(*kmsg.DeleteTopicsResponse)
		if len(resp.Topics) != 2 || *resp.Topics[1].Topic != "b" || resp.Topics[1].ErrorCode != code {
			t.Fatalf("%+v", resp)
		}
	})
	t.Run("AddPartitionsToTxn partition list", func(t *testing.T) {
		req := kmsg.NewPtrAddPartitionsToTxnRequest()
		req.Version = 3
		rt := kmsg.NewAddPartitionsToTxnRequestTopic()
		rt.Topic, rt.Partitions = "t", []int32{0, 2}
		req.Topics = append(req.Topics, rt)
		resp := errorResponse(req, code).(*kmsg.AddPartitionsToTxnResponse)
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 2 || resp.Topics[0].Partitions[1].Partition != 2 ||
			resp.Topics[0].Partitions[1].ErrorCode != code {
			t.Fatalf("%+v", resp)
		}
	})
	t.Run("OffsetFetch v8 groups", func(t *testing.T) {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version = 8
		g := kmsg.NewOffsetFetchRequestGroup()
		g.Group = "g"
		gt := kmsg.NewOffsetFetchRequestGroupTopic()
		gt.Topic, gt.Partitions = "t", []int32{1}
		g.Topics = append(g.Topics, gt)
		req.Groups = append(req.Groups, g)
		resp := errorResponse(req, code).(*kmsg.OffsetFetchResponse)
		if len(resp.Groups) != 1 || resp.Groups[0].Group != "g" || resp.Groups[0].ErrorCode != code ||
			resp.Groups[0].Topics[0].Partitions[0].Partition != 1 || resp.Groups[0].Topics[0].Partitions[0].ErrorCode != code {
			t.Fatalf("%+v", resp)
		}
	})
	t.Run("DescribeConfigs", func(t *testing.T) {
		req := kmsg.NewPtrDescribeConfigsRequest()
		r := kmsg.NewDescribeConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, "t"
		req.Resources = append(req.Resources, r)
		resp := errorResponse(req, code).(*kmsg.DescribeConfigsResponse)
		if len(resp.Resources) != 1 || resp.Resources[0].ResourceName != "t" || resp.Resources[0].ErrorCode != code {
			t.Fatalf("%+v", resp)
		}
	})
}

func TestRequestNames(t *testing.T) {
	id := [16]byte{9}
	idName := func(got [16]byte) string {
		if got == id {
			return "by-id"
		}
		return ""
	}
	fetch := kmsg.NewPtrFetchRequest()
	rt := kmsg.NewFetchRequestTopic()
	rt.TopicID = id
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition = 4
	rt.Partitions = append(rt.Partitions, rp)
	fetch.Topics = append(fetch.Topics, rt)

	of := kmsg.NewPtrOffsetFetchRequest()
	g := kmsg.NewOffsetFetchRequestGroup()
	gt := kmsg.NewOffsetFetchRequestGroupTopic()
	gt.Topic, gt.Partitions = "t", []int32{1}
	g.Topics = append(g.Topics, gt)
	of.Groups = append(of.Groups, g)

	del := kmsg.NewPtrDeleteTopicsRequest()
	del.TopicNames = []string{"gone"}

	dc := kmsg.NewPtrDescribeConfigsRequest()
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, "cfg"
	dc.Resources = append(dc.Resources, r)

	for _, tc := range []struct {
		req       kmsg.Request
		topic     string
		partition int32
		want      bool
	}{
		{fetch, "by-id", -1, true}, {fetch, "by-id", 4, true}, {fetch, "by-id", 5, false}, {fetch, "other", -1, false},
		{of, "t", 1, true}, {of, "t", 0, false},
		{del, "gone", -1, true}, {del, "gone", 0, false},
		{dc, "cfg", -1, true},
		{kmsg.NewPtrHeartbeatRequest(), "t", -1, false},
	} {
		if got := requestNames(tc.req, tc.topic, tc.partition, idName); got != tc.want {
			t.Errorf("%s names %s/%d: %v, want %v", kmsg.NameForKey(tc.req.Key()), tc.topic, tc.partition, got, tc.want)
		}
	}
}

func TestSetErrorsOnePartition(t *testing.T) {
	resp := kmsg.NewPtrListOffsetsResponse()
	for _, name := range []string{"a", "b"} {
		rt := kmsg.NewListOffsetsResponseTopic()
		rt.Topic = name
		for p := int32(0); p < 2; p++ {
			rp := kmsg.NewListOffsetsResponseTopicPartition()
			rp.Partition = p
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	setErrors(resp, "b", 1, code, func([16]byte) string { return "" })
	var got []string
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if rp.ErrorCode != 0 {
				got = append(got, rt.Topic+"-"+string(rune('0'+rp.Partition)))
			}
		}
	}
	if strings.Join(got, ",") != "b-1" {
		t.Fatalf("errors set on %v, want b-1 only", got)
	}
}

// The fault endpoints exist only with faults.enable.
func TestFaultEndpointsOnlyWhenEnabled(t *testing.T) {
	for _, enabled := range []bool{false, true} {
		sets := []string{}
		if enabled {
			sets = append(sets, "faults.enable=true")
		}
		b := newTestBroker(t, t.TempDir(), sets...)
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("GET", "/v1/faults", nil)
		req.Host, req.RemoteAddr = "127.0.0.1:9644", "127.0.0.1:5000"
		b.httpHandler().ServeHTTP(rec, req)
		want := http.StatusNotFound
		if enabled {
			want = http.StatusOK
		}
		if rec.Code != want || (b.Faults() != nil) != enabled {
			t.Errorf("faults.enable=%v: GET /v1/faults %d (want %d), registry %v", enabled, rec.Code, want, b.Faults() != nil)
		}
		closeBroker(t, b)
	}
}

// A client that is not on loopback cannot set a fault, whatever address
// the HTTP listener is bound to. Negative control: the same request to
// the handler without loopbackOnly sets it.
func TestFaultEndpointsLoopbackOnly(t *testing.T) {
	b := newTestBroker(t, t.TempDir(), "faults.enable=true")
	defer closeBroker(t, b)
	post := func(h http.Handler, remote string) int {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("POST", "/v1/faults", strings.NewReader(`{"kind":"drop","count":1}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(AdminHeader, "test")
		req.Host, req.RemoteAddr = "127.0.0.1:9644", remote
		h.ServeHTTP(rec, req)
		return rec.Code
	}
	h := b.httpHandler()
	for _, remote := range []string{"192.0.2.7:40000", "[2001:db8::1]:40000", "10.0.0.1:1", "garbage"} {
		if got := post(h, remote); got != http.StatusForbidden {
			t.Errorf("from %s: HTTP %d, want 403", remote, got)
		}
	}
	if n := len(b.Faults().List()); n != 0 {
		t.Fatalf("%d faults set by remote clients", n)
	}
	for _, remote := range []string{"127.0.0.1:40000", "[::1]:40000", "127.9.9.9:1"} {
		if got := post(h, remote); got != http.StatusCreated {
			t.Errorf("from %s: HTTP %d, want 201", remote, got)
		}
	}
	ungated := b.faultHandlers()["POST /v1/faults"]
	if got := post(ungated, "192.0.2.7:40000"); got != http.StatusCreated {
		t.Fatalf("negative control: without the gate the remote request got %d", got)
	}
}
