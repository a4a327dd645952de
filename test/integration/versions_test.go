package integration

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/minibrokertest"
)

// TestEveryAdvertisedVersionRoundTrips sends a request at every version of
// every API the broker advertises in ApiVersions, over a raw connection,
// and decodes the response at that version: nothing advertised is left
// unserved, and every answer is well formed.
func TestEveryAdvertisedVersionRoundTrips(t *testing.T) {
	t.Parallel()
	roundTripEveryVersion(t, minibrokertest.Start(t, minibrokertest.Topic("v", 1)))
}

// The same with client.protocol.version=3.9: Kafka 3.9's ranges, the
// versions KIP-896 removed included (Produce v0–v2, Fetch v0–v3,
// ListOffsets v0, CreateTopics v0–v1, …), each answered well formed.
func TestEveryAdvertisedVersionRoundTripsKafka39(t *testing.T) {
	t.Parallel()
	roundTripEveryVersion(t, minibrokertest.Start(t, minibrokertest.Topic("v", 1),
		minibrokertest.Set("client.protocol.version", "3.9")))
}

func roundTripEveryVersion(t *testing.T, c *minibrokertest.Cluster) {
	rc := dialRaw(t, c.Addr())
	av := kmsg.NewPtrApiVersionsRequest()
	av.Version = 0
	rc.write(requestFrame(av, 1))
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 0
	if err := resp.ReadFrom(rc.readResponse(1, false)); err != nil {
		t.Fatal(err)
	}
	corr := int32(10)
	total := 0
	for _, k := range resp.ApiKeys {
		for v := k.MinVersion; v <= k.MaxVersion; v++ {
			req := kmsg.RequestForKey(k.ApiKey)
			if req == nil {
				t.Fatalf("advertised unknown key %d", k.ApiKey)
			}
			req.SetVersion(v)
			fillMinimal(req)
			corr++
			if p, ok := req.(*kmsg.ProduceRequest); ok && p.Acks == 0 {
				p.Acks = 1
			}
			rc.write(requestFrame(req, corr))
			body := rc.readResponse(corr, req.IsFlexible() && k.ApiKey != 18)
			r := req.ResponseKind()
			r.SetVersion(v)
			if err := r.ReadFrom(body); err != nil {
				t.Fatalf("%s v%d: response does not decode: %v", kmsg.NameForKey(k.ApiKey), v, err)
			}
			total++
		}
	}
	t.Logf("%d API versions round-tripped", total)
}

// fillMinimal gives requests the fields without which Kafka would refuse
// to parse them (a topic to name, a group id, timeouts).
func fillMinimal(req kmsg.Request) {
	switch r := req.(type) {
	case *kmsg.ApiVersionsRequest:
		r.ClientSoftwareName, r.ClientSoftwareVersion = "versions-test", "1.0"
	case *kmsg.ProduceRequest:
		r.Acks, r.TimeoutMillis = 1, 1000
	case *kmsg.FetchRequest:
		r.MaxWaitMillis, r.SessionEpoch = 0, -1
	case *kmsg.MetadataRequest:
		r.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("v")}}
	case *kmsg.JoinGroupRequest:
		// A group per version: a second member would wait for a rebalance.
		r.Group = fmt.Sprintf("vg-%d", r.Version)
		r.SessionTimeoutMillis, r.RebalanceTimeoutMillis, r.ProtocolType = 10000, 10000, "consumer"
		r.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range"}}
	case *kmsg.FindCoordinatorRequest:
		r.CoordinatorKey = "vg"
		r.CoordinatorKeys = []string{"vg"}
	case *kmsg.OffsetFetchRequest:
		r.Group = "vg"
		r.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "vg"}}
	case *kmsg.InitProducerIDRequest:
		r.ProducerID, r.ProducerEpoch = -1, -1
	case *kmsg.DescribeClusterRequest:
		r.EndpointType = 1
	}
}
