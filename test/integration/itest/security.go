// Helpers shared by the security tests: brokers with ACLs or SASL, their
// clients, and produces that must pass or fail within a time. The rule each
// test proves is mapped in doc.go.

package itest

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	xscram "github.com/xdg-go/scram"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/minibroker/minibroker/internal/security/certtest"
	"github.com/minibroker/minibroker/minibrokertest"
)

// aclBroker: a SASL_PLAINTEXT listener with PLAIN users admin (a super
// user), alice and bob, and the authorizer on unless off.
func AclBroker(t testing.TB, on bool, extra ...minibrokertest.Option) *minibrokertest.Cluster {
	t.Helper()
	opts := []minibrokertest.Option{
		minibrokertest.Set("listeners", "SASL_PLAINTEXT://127.0.0.1:0"),
		minibrokertest.Set("listener.name.sasl_plaintext.sasl.enabled.mechanisms", "PLAIN"),
		minibrokertest.Set("listener.name.sasl_plaintext.plain.sasl.jaas.config", aclJAAS),
		minibrokertest.Set("super.users", "User:admin"),
	}
	if on {
		opts = append(opts, minibrokertest.Set("authorizer.class.name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer"))
	}
	return minibrokertest.Start(t, append(opts, extra...)...)
}

// AclClient is a kgo client authenticated as user (password user-secret).
func AclClient(t *testing.T, c *minibrokertest.Cluster, user string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	return NewClient(t, c.ListenerAddr("SASL_PLAINTEXT"), append([]kgo.Opt{
		kgo.SASL(plain.Auth{User: user, Pass: user + "-secret"}.AsMechanism()),
		kgo.RetryTimeout(2 * time.Second), kgo.RequestRetries(1)}, opts...)...)
}

func DescribeACLs(t *testing.T, cl *kgo.Client, mut func(*kmsg.DescribeACLsRequest)) (int16, int) {
	t.Helper()
	req := kmsg.NewPtrDescribeACLsRequest()
	req.ResourceType, req.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
	req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	mut(req)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range resp.Resources {
		n += len(r.ACLs)
	}
	return resp.ErrorCode, n
}

func MustACLs(t *testing.T, err error, res kadm.CreateACLsResults) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
}

// FetchCode fetches partition 0 of topic from offset 0 and returns its
// error code and record-batch bytes (id: the topic's ID, which a
// principal that may not DESCRIBE it cannot learn itself).
func FetchCode(t *testing.T, cl *kgo.Client, topic string, id [16]byte) (int16, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxWaitMillis, req.MaxBytes = -1, 10, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic, ft.TopicID = topic, id
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes = 1 << 20
	ft.Partitions = append(ft.Partitions, fp)
	req.Topics = append(req.Topics, ft)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	p := resp.Topics[0].Partitions[0]
	return p.ErrorCode, len(p.RecordBatches)
}

const PlainJAAS = `org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret" user_bob="bob-secret";`

// saslBroker: PLAINTEXT, SASL_PLAINTEXT (PLAIN users alice and bob) and
// SASL_SSL (SCRAM-SHA-512) listeners, logging to an observer, with HTTP.
func SaslBroker(t *testing.T, ca *certtest.CA, extra ...minibrokertest.Option) (*minibrokertest.Cluster, *observer.ObservedLogs) {
	t.Helper()
	ks := certtest.WriteFile(t, t.TempDir(), "broker.pem", ca.Server(t, "broker-1").Keystore())
	core, logs := observer.New(zap.InfoLevel)
	opts := append([]minibrokertest.Option{
		minibrokertest.Logger(zap.New(core)), minibrokertest.HTTP(),
		minibrokertest.Set("listeners", "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0"),
		minibrokertest.Set("listener.name.sasl_plaintext.sasl.enabled.mechanisms", "PLAIN"),
		minibrokertest.Set("listener.name.sasl_plaintext.plain.sasl.jaas.config", PlainJAAS),
		minibrokertest.Set("listener.name.sasl_ssl.sasl.enabled.mechanisms", "SCRAM-SHA-512,SCRAM-SHA-256"),
		minibrokertest.Set("listener.name.sasl_ssl.ssl.keystore.location", ks),
	}, extra...)
	return minibrokertest.Start(t, opts...), logs
}

func SaslMetric(t *testing.T, httpAddr, series string) string {
	t.Helper()
	resp, err := http.Get("http://" + httpAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, series+" ") {
			return strings.TrimPrefix(line, series+" ")
		}
	}
	return ""
}

func ProduceOne(t *testing.T, cl *kgo.Client, topic string) error {
	t.Helper()
	return ProduceWithin(cl, topic, 10*time.Second)
}

// ProduceWithin produces one record within d (a refused client's attempt
// ends at d).
func ProduceWithin(cl *kgo.Client, topic string, d time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("v")}).FirstErr()
}

// SaramaSCRAM adapts xdg-go/scram to sarama.SCRAMClient, as sarama's
// examples do.
type SaramaSCRAM struct {
	Gen  xscram.HashGeneratorFcn
	conv *xscram.ClientConversation
}

func (s *SaramaSCRAM) Begin(user, pass, authz string) error {
	c, err := s.Gen.NewClient(user, pass, authz)
	if err != nil {
		return err
	}
	s.conv = c.NewConversation()
	return nil
}

func (s *SaramaSCRAM) Step(challenge string) (string, error) { return s.conv.Step(challenge) }

func (s *SaramaSCRAM) Done() bool { return s.conv.Done() }

const aclJAAS = `org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="admin-secret" user_alice="alice-secret" user_bob="bob-secret";`
