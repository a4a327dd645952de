package security

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/minibroker/minibroker/minibrokertest"
)

// Deleting topics under ACLs with the clients that send DeleteTopics
// v1–v5 (a list of names, not of structs): kafka-python (Debian's
// python3-kafka, v3) and sarama (v3, v4, v5; and v6). alice has DELETE on the topics
// named del-*, nothing on keep-*: her delete of del-* succeeds and the
// topic is gone; her delete of keep-* answers TOPIC_AUTHORIZATION_FAILED
// and the topic stays. Before the authorization rules were typed, the
// rule read the names as structs by reflection, panicked, and the broker
// closed the connection: both clients failed with a broken connection.

// deleteACLBroker is aclBroker (SASL PLAIN, authorizer on) with topics
// del-<name> and keep-<name> for each name, and alice allowed DELETE
// (and DESCRIBE) on the prefix del-.
func deleteACLBroker(t *testing.T, names ...string) *minibrokertest.Cluster {
	t.Helper()
	var topics []minibrokertest.Option
	for _, n := range names {
		topics = append(topics, minibrokertest.Topic("del-"+n, 1), minibrokertest.Topic("keep-"+n, 1))
	}
	c := itest.AclBroker(t, true, topics...)
	adm := kadm.NewClient(itest.AclClient(t, c, "admin"))
	b := kadm.NewACLs().Allow("User:alice").AllowHosts("*").
		ResourcePatternType(kadm.ACLPatternPrefixed).Topics("del-").
		Operations(kadm.OpDelete, kadm.OpDescribe)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := adm.CreateACLs(ctx, b)
	itest.MustACLs(t, err, res)
	return c
}

func topicExists(t *testing.T, c *minibrokertest.Cluster, name string) bool {
	t.Helper()
	_, ok := c.Broker().Topic(name)
	return ok
}

func TestKafkaPythonDeleteTopicsUnderACLs(t *testing.T) {
	t.Parallel()
	python := kafkaPython(t)
	c := deleteACLBroker(t, "py")
	script := `
import sys
from kafka.admin import KafkaAdminClient
admin = KafkaAdminClient(bootstrap_servers=sys.argv[1], security_protocol="SASL_PLAINTEXT",
    sasl_mechanism="PLAIN", sasl_plain_username="alice", sasl_plain_password="alice-secret",
    request_timeout_ms=10000, client_id="kafka-python-delete")
for topic in sys.argv[2:]:
    try:
        admin.delete_topics([topic], timeout_ms=10000)
        print(topic, "deleted")
    except Exception as e:
        print(topic, type(e).__name__)
admin.close()
`
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, python, "-c", script, c.ListenerAddr("SASL_PLAINTEXT"), "del-py", "keep-py").CombinedOutput()
	if err != nil {
		t.Fatalf("kafka-python: %v\n%s", err, out)
	}
	got := strings.TrimSpace(string(out))
	want := "del-py deleted\nkeep-py TopicAuthorizationFailedError"
	if got != want {
		t.Fatalf("kafka-python printed\n%s\nwant\n%s", got, want)
	}
	if topicExists(t, c, "del-py") || !topicExists(t, c, "keep-py") {
		t.Fatalf("after the deletes: del-py exists %v (want false), keep-py exists %v (want true)",
			topicExists(t, c, "del-py"), topicExists(t, c, "keep-py"))
	}
}

// TestSaramaDeleteTopicsUnderACLs: sarama's ClusterAdmin at the Kafka
// versions that make it send DeleteTopics v3, v4, v5 (names) and v6
// (structs; this one never panicked).
func TestSaramaDeleteTopicsUnderACLs(t *testing.T) {
	t.Parallel()
	versions := map[string]sarama.KafkaVersion{"v3": sarama.V2_1_0_0, "v4": sarama.V2_4_0_0, "v5": sarama.V2_7_0_0, "v6": sarama.V2_8_0_0}
	var names []string
	for v := range versions {
		names = append(names, "sarama-"+v)
	}
	c := deleteACLBroker(t, names...)
	for v, kv := range versions {
		t.Run("DeleteTopics "+v, func(t *testing.T) {
			cfg := itest.SaramaConfig(kv)
			cfg.Admin.Retry.Max = 0
			cfg.Net.SASL.Enable, cfg.Net.SASL.Mechanism = true, sarama.SASLTypePlaintext
			cfg.Net.SASL.User, cfg.Net.SASL.Password = "alice", "alice-secret"
			adm, err := sarama.NewClusterAdmin([]string{c.ListenerAddr("SASL_PLAINTEXT")}, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer adm.Close()
			del, keep := "del-sarama-"+v, "keep-sarama-"+v
			if err := adm.DeleteTopic(del); err != nil {
				t.Fatalf("alice deletes %s (DELETE allowed): %v", del, err)
			}
			if err := adm.DeleteTopic(keep); !errors.Is(err, sarama.ErrTopicAuthorizationFailed) {
				t.Fatalf("alice deletes %s (no ACL): %v, want TOPIC_AUTHORIZATION_FAILED", keep, err)
			}
			if topicExists(t, c, del) || !topicExists(t, c, keep) {
				t.Fatalf("after the deletes: %s exists %v (want false), %s exists %v (want true)",
					del, topicExists(t, c, del), keep, topicExists(t, c, keep))
			}
		})
	}
}

// kafkaPython is Debian's /usr/bin/python3 with python3-kafka, a
// required test dependency (`make deps` installs it), never a skip.
func kafkaPython(t *testing.T) string {
	t.Helper()
	const python = "/usr/bin/python3"
	if out, err := exec.Command(python, "-c", "import kafka").CombinedOutput(); err != nil {
		t.Fatalf("%s cannot import kafka (%v: %s): run `make deps` (apt-get install python3-kafka)", python, err, out)
	}
	return python
}
