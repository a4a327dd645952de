package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// kafkactlSuite: deviceinsight's kafkactl (sarama inside, its default
// kafkaVersion 2.5.0), with a config file of two contexts as its README
// shows: topics, configs, produce/consume with keys and headers, groups
// and lag, offsets reset, partition replicas (a reassignment), brokers,
// and ACLs on the SASL broker.
func kafkactlSuite(e *env) {
	const tool = "kafkactl"
	bin := e.s.lookTool("kafkactl")
	if bin == "" {
		e.s.skip(tool, "all commands", "kafkactl could not be installed (see its install row)")
		return
	}
	cfg := filepath.Join(e.s.tmp, "kafkactl.yml")
	text := fmt.Sprintf(`contexts:
  plain:
    brokers:
      - %s
  sasl:
    brokers:
      - %s
    sasl:
      enabled: true
      username: admin
      password: admin-secret
      mechanism: plaintext
current-context: plain
`, e.plain.addr, e.sasl.addr)
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		e.s.add(row{Tool: tool, Command: "write its config", Result: resultFail, Detail: err.Error()})
		return
	}
	kctl := func(context, stdin string, args ...string) (string, error) {
		argv := append([]string{bin, "--config-file", cfg, "--context", context}, args...)
		return runCmd(cmdSpec{argv: argv, stdin: stdin, timeout: 40 * time.Second, dir: e.s.tmp})
	}
	plain := func(args ...string) (string, error) { return kctl("plain", "", args...) }
	const topic, group = "eco-kafkactl", "eco-kafkactl-g"
	e.s.check(tool, "create topic --partitions 3 --config", func() error {
		_, err := plain("create", "topic", topic, "--partitions", "3", "--config", "retention.ms=86400000")
		return err
	})
	e.s.check(tool, "get topics", func() error {
		out, err := plain("get", "topics")
		if err != nil {
			return err
		}
		return expectContains(out, topic)
	})
	e.s.check(tool, "describe topic", func() error {
		out, err := plain("describe", "topic", topic)
		if err != nil {
			return err
		}
		return expectContains(out, "retention.ms", "86400000")
	})
	e.s.check(tool, "alter topic --config (IncrementalAlterConfigs)", func() error {
		if _, err := plain("alter", "topic", topic, "--config", "retention.ms=3600000"); err != nil {
			return err
		}
		out, err := plain("describe", "topic", topic)
		if err != nil {
			return err
		}
		return expectContains(out, "3600000")
	})
	e.s.check(tool, "alter topic --partitions 4", func() error {
		_, err := plain("alter", "topic", topic, "--partitions", "4")
		return err
	})
	e.s.check(tool, "produce with key and headers", func() error {
		for i := 0; i < 3; i++ {
			if _, err := plain("produce", topic, "--key", fmt.Sprintf("k%d", i), "--value", fmt.Sprintf("v%d", i),
				"--header", "trace:t1", "--partition", "0"); err != nil {
				return err
			}
		}
		return nil
	})
	e.s.check(tool, "consume --from-beginning --exit --print-keys --print-headers", func() error {
		out, err := plain("consume", topic, "--from-beginning", "--exit", "--print-keys", "--print-headers")
		if err != nil {
			return err
		}
		return expectContains(out, "k0#v0", "trace:t1", "k2#v2")
	})
	e.s.check(tool, "consume --group --max-messages 3 (joins, commits)", func() error {
		out, err := plain("consume", topic, "--group", group, "--from-beginning", "--max-messages", "3")
		if err != nil {
			return err
		}
		return expectContains(out, "v0", "v2")
	})
	e.s.check(tool, "get consumer-groups", func() error {
		out, err := plain("get", "consumer-groups")
		if err != nil {
			return err
		}
		return expectContains(out, group)
	})
	e.s.check(tool, "describe consumer-group (offsets and lag)", func() error {
		return waitUntil(10*time.Second, func() error {
			out, err := plain("describe", "consumer-group", group)
			if err != nil {
				return err
			}
			return expectContains(out, topic, "LAG")
		})
	})
	e.s.check(tool, "reset consumer-group-offset --oldest --execute (lag back to 3)", func() error {
		if _, err := plain("reset", "consumer-group-offset", group, "--topic", topic, "--oldest", "--execute"); err != nil {
			return err
		}
		lag, err := e.groupLag(group)
		if err != nil {
			return err
		}
		if lag != 3 {
			return fmt.Errorf("lag %d after the reset, want 3", lag)
		}
		return nil
	})
	e.s.check(tool, "create consumer-group --topic --newest (lag 0)", func() error {
		if _, err := plain("create", "consumer-group", group+"-new", "--topic", topic, "--newest"); err != nil {
			return err
		}
		lag, err := e.groupLag(group + "-new")
		if err != nil {
			return err
		}
		if lag != 0 {
			return fmt.Errorf("lag %d, want 0", lag)
		}
		return nil
	})
	e.s.check(tool, "delete consumer-group-offset --topic --partition 0", func() error {
		_, err := plain("delete", "consumer-group-offset", group+"-new", "--topic", topic, "--partition", "0")
		return err
	})
	e.s.check(tool, "clone topic (partitions and configs)", func() error {
		if _, err := plain("clone", "topic", topic, topic+"-clone"); err != nil {
			return err
		}
		out, err := plain("describe", "topic", topic+"-clone")
		if err != nil {
			return err
		}
		return expectContains(out, "3600000")
	})
	e.s.check(tool, "consume --isolation-level ReadCommitted --tail 2", func() error {
		out, err := plain("consume", topic, "--isolation-level", "ReadCommitted", "--tail", "2", "--partitions", "0", "--print-keys")
		if err != nil {
			return err
		}
		return expectContains(out, "k1#v1", "k2#v2")
	})
	e.s.check(tool, "delete consumer-group", func() error {
		_, err := plain("delete", "consumer-group", group)
		return err
	})
	e.s.check(tool, "delete records --offset 0=1", func() error {
		_, err := plain("delete", "records", topic, "--offset", "0=1")
		return err
	})
	e.s.check(tool, "alter partition --replicas 0 (reassignment onto this node)", func() error {
		_, err := plain("alter", "partition", topic, "0", "--replicas", "0")
		return err
	})
	e.s.check(tool, "get brokers", func() error {
		out, err := plain("get", "brokers")
		if err != nil {
			return err
		}
		return expectContains(out, e.plain.addr)
	})
	e.s.check(tool, "describe broker 0 (its configs set on the command line)", func() error {
		out, err := plain("describe", "broker", "0")
		if err != nil {
			return err
		}
		return expectContains(out, "group.initial.rebalance.delay.ms")
	})
	e.s.check(tool, "delete topic", func() error {
		_, err := plain("delete", "topic", topic)
		return err
	})

	// ACLs, on the SASL broker as the super user.
	sasl := func(args ...string) (string, error) { return kctl("sasl", "", args...) }
	const aclTopic = "eco-kafkactl-acl"
	e.s.check(tool, "SASL: create topic", func() error {
		_, err := sasl("create", "topic", aclTopic)
		return err
	})
	e.s.check(tool, "SASL: create acl --topic --operation read --allow", func() error {
		_, err := sasl("create", "acl", "--topic", aclTopic, "--operation", "read", "--principal", "User:alice", "--allow")
		return err
	})
	e.s.check(tool, "SASL: get acl", func() error {
		out, err := sasl("get", "acl")
		if err != nil {
			return err
		}
		return expectContains(out, "User:alice", aclTopic)
	})
	e.s.check(tool, "SASL: delete acl --topics --operation any --pattern any", func() error {
		out, err := sasl("delete", "acl", "--topics", "--operation", "any", "--pattern", "any")
		if err != nil {
			return err
		}
		if !strings.Contains(out, "User:alice") {
			return fmt.Errorf("deleted nothing: %s", tail("", out))
		}
		return nil
	})
	e.s.check(tool, "SASL: delete topic with the authorizer on", func() error {
		_, err := sasl("delete", "topic", aclTopic)
		return err
	})
}
