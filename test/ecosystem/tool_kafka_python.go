package main

import (
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

//go:embed kafka_python.py
var kafkaPythonScript []byte

// kafkaPythonSuite: Debian's python3-kafka (run with /usr/bin/python3, not
// a pyenv one): the admin client's topic, config, group and ACL calls, a
// producer with keys and headers, a group consumer.
func kafkaPythonSuite(e *env) {
	const tool = "kafka-python"
	const python = "/usr/bin/python3"
	if !fileExists(python) || !fileExists("/usr/lib/python3/dist-packages/kafka/__init__.py") {
		e.s.skip(tool, "all commands", "python3-kafka is not installed")
		return
	}
	script := filepath.Join(e.s.tmp, "kafka_python.py")
	if err := os.WriteFile(script, kafkaPythonScript, 0o644); err != nil {
		e.s.add(row{Tool: tool, Command: "write the script", Result: resultFail, Detail: err.Error()})
		return
	}
	py := func(sasl bool, user string, args ...string) (string, error) {
		addr, env := e.plain.addr, []string{"KAFKA_USER="}
		if sasl {
			addr, env = e.sasl.addr, []string{"KAFKA_USER=" + user}
		}
		out, err := runCmd(cmdSpec{argv: append([]string{python, script, addr}, args...), env: env, timeout: 45 * time.Second})
		if err != nil {
			return out, pythonError(err)
		}
		return out, nil
	}
	const topic, group = "eco-python", "eco-python-g"
	e.s.check(tool, "admin: create_topics (3 partitions)", func() error {
		_, err := py(false, "", "create-topic", topic, "3")
		return err
	})
	e.s.check(tool, "admin: list_topics", func() error {
		out, err := py(false, "", "list-topics")
		if err != nil {
			return err
		}
		return expectContains(out, "'"+topic+"'")
	})
	e.s.check(tool, "admin: describe_topics", func() error {
		out, err := py(false, "", "describe-topic", topic)
		if err != nil {
			return err
		}
		return expectContains(out, "'topic': '"+topic+"'", "'partition': 2")
	})
	e.s.check(tool, "admin: describe_cluster", func() error {
		out, err := py(false, "", "describe-cluster")
		if err != nil {
			return err
		}
		return expectContains(out, "'cluster_id'")
	})
	e.s.check(tool, "admin: describe_configs (topic)", func() error {
		out, err := py(false, "", "describe-configs", topic)
		if err != nil {
			return err
		}
		return expectContains(out, "retention.ms")
	})
	e.s.check(tool, "admin: describe_configs (broker 0)", func() error {
		out, err := py(false, "", "describe-broker-configs", "0")
		if err != nil {
			return err
		}
		return expectContains(out, "num.partitions")
	})
	e.s.check(tool, "admin: alter_configs retention.ms, read back", func() error {
		out, err := py(false, "", "alter-configs", topic, "retention.ms=3600000")
		if err != nil {
			return err
		}
		return expectContains(out, "'3600000'")
	})
	e.s.check(tool, "admin: create_partitions 3 → 4", func() error {
		_, err := py(false, "", "create-partitions", topic, "4")
		return err
	})
	e.s.check(tool, "producer: keys and headers, acks=1", func() error {
		_, err := py(false, "", "produce", topic, "20")
		return err
	})
	e.s.check(tool, "producer: gzip, acks=all", func() error {
		_, err := py(false, "", "produce-gzip", topic, "5")
		return err
	})
	e.s.check(tool, "consumer: beginning_offsets, end_offsets, offsets_for_times", func() error {
		out, err := py(false, "", "offsets-for-times", topic)
		if err != nil {
			return err
		}
		return expectContains(out, "beginning {", "end {", "OffsetAndTimestamp(offset=0")
	})
	e.s.check(tool, "consumer: assign and seek to offset 3", func() error {
		out, err := py(false, "", "assign-seek", topic, "3")
		if err != nil {
			return err
		}
		return expectContains(out, "offset 3 ")
	})
	e.s.check(tool, "consumer group: subscribe, consume, commit", func() error {
		out, err := py(false, "", "consume-group", topic, group, "25")
		if err != nil {
			return err
		}
		return expectContains(out, "key-0=value-0 [('trace', 't-0')]", "key-19=value-19")
	})
	e.s.check(tool, "admin: list_consumer_groups", func() error {
		out, err := py(false, "", "list-groups")
		if err != nil {
			return err
		}
		return expectContains(out, "'"+group+"'")
	})
	e.s.check(tool, "admin: describe_consumer_groups", func() error {
		out, err := py(false, "", "describe-group", group)
		if err != nil {
			return err
		}
		return expectContains(out, "group='"+group+"'")
	})
	e.s.check(tool, "lag: list_consumer_group_offsets against end_offsets", func() error {
		out, err := py(false, "", "group-lag", topic, group)
		if err != nil {
			return err
		}
		return expectContains(out, "lag 0 ")
	})
	e.s.check(tool, "admin: delete_consumer_groups", func() error {
		out, err := py(false, "", "delete-group", group)
		if err != nil {
			return err
		}
		return expectContains(out, "NoError")
	})
	e.s.check(tool, "admin: delete_topics", func() error {
		_, err := py(false, "", "delete-topic", topic)
		return err
	})

	// On the SASL broker with the authorizer on, as the super user admin.
	const aclTopic = "eco-python-acl"
	e.s.check(tool, "SASL admin: create_topics", func() error {
		_, err := py(true, "admin", "create-topic", aclTopic, "1")
		return err
	})
	e.s.check(tool, "SASL admin: create_acls (alice READ on a topic)", func() error {
		_, err := py(true, "admin", "create-acl", "User:alice", aclTopic)
		return err
	})
	e.s.check(tool, "SASL admin: describe_acls", func() error {
		out, err := py(true, "admin", "describe-acls")
		if err != nil {
			return err
		}
		return expectContains(out, "User:alice")
	})
	e.s.check(tool, "SASL admin: delete_acls", func() error {
		out, err := py(true, "admin", "delete-acls", "User:alice", aclTopic)
		if err != nil {
			return err
		}
		return expectContains(out, "User:alice")
	})
	e.s.check(tool, "SASL admin: delete_topics with the authorizer on", func() error {
		_, err := py(true, "admin", "delete-topic", aclTopic)
		return err
	})
	e.s.check(tool, "SASL: alice (no ACL) cannot create a topic", func() error {
		_, err := py(true, "alice", "create-topic", "eco-python-denied", "1")
		if err == nil {
			return fmt.Errorf("alice created a topic without an ACL")
		}
		if !strings.Contains(err.Error(), "AuthorizationFailed") {
			return fmt.Errorf("refused, but not for authorization: %v", err)
		}
		return nil
	})
}

// pythonError shortens a Python traceback to its last line.
func pythonError(err error) error {
	msg := err.Error()
	if m := regexp.MustCompile(`([A-Za-z_.]+(Error|Exception)[^/]*)`).FindAllString(msg, -1); len(m) > 0 {
		return fmt.Errorf("%s", strings.TrimSpace(m[len(m)-1]))
	}
	return err
}
