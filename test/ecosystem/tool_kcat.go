package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// kcatSuite: Debian's kcat (librdkafka) — metadata, produce and consume
// with keys and headers, offsets by time, a balanced consumer group, a
// static member that closes without leaving, and SASL with ACLs.
func kcatSuite(e *env) {
	const tool = "kcat"
	bin := e.s.lookTool("kcat")
	if bin == "" {
		e.s.skip(tool, "all commands", "kcat is not installed")
		return
	}
	kcat := func(stdin string, timeout time.Duration, args ...string) (string, error) {
		return runCmd(cmdSpec{argv: append([]string{bin, "-b", e.plain.addr}, args...), stdin: stdin, timeout: timeout})
	}
	const topic = "eco-kcat"
	e.s.check(tool, "metadata: -L", func() error {
		out, err := kcat("", 20*time.Second, "-L")
		if err != nil {
			return err
		}
		return expectContains(out, "1 brokers:", "(controller)")
	})
	e.s.check(tool, "produce with keys and headers, topic auto-created: -P -K: -H", func() error {
		_, err := kcat("k1:v1\nk2:v2\nk3:v3\n", 30*time.Second, "-P", "-t", topic, "-K:", "-H", "trace=abc", "-H", "app=eco")
		return err
	})
	e.s.check(tool, "consume from the beginning with keys and headers: -C -e -f", func() error {
		out, err := kcat("", 30*time.Second, "-C", "-t", topic, "-o", "beginning", "-e", "-f", "%k=%s [%h]\\n")
		if err != nil {
			return err
		}
		return expectContains(out, "k1=v1 [trace=abc,app=eco]", "k3=v3")
	})
	e.s.check(tool, "offsets for a time: -Q -t topic:0:-1", func() error {
		out, err := kcat("", 20*time.Second, "-Q", "-t", topic+":0:-1")
		if err != nil {
			return err
		}
		return expectContains(out, topic+" [0] offset 3")
	})
	e.s.check(tool, "balanced consumer group, commits, lag 0: -G", func() error {
		out, err := kcat("", 45*time.Second, "-G", "eco-kcat-g", "-X", "auto.offset.reset=earliest", "-e", "-f", "%s\\n", topic)
		if err != nil {
			return err
		}
		if err := expectContains(out, "v1", "v3"); err != nil {
			return err
		}
		return waitUntil(10*time.Second, func() error {
			lag, err := e.groupLag("eco-kcat-g")
			if err != nil {
				return err
			}
			if lag != 0 {
				return fmt.Errorf("group lag %d after consuming everything, want 0", lag)
			}
			return nil
		})
	})
	// The item: a static member closes without LeaveGroup; Kafka
	// removes it once its session times out, and the group can be deleted.
	e.s.check(tool, "static member (group.instance.id, session.timeout.ms=6000) closed: group deletable after the session", func() error {
		const group = "eco-kcat-static"
		_, err := kcat("", 45*time.Second, "-G", group, "-X", "group.instance.id=kcat-static-1", "-X", "session.timeout.ms=6000",
			"-X", "auto.offset.reset=earliest", "-e", "-f", "%s\\n", topic)
		if err != nil {
			return err
		}
		closed := time.Now()
		n, state, err := e.groupMembers(group)
		if err != nil {
			return err
		}
		if n != 1 {
			return fmt.Errorf("right after close: %d members (%s), want the static member still in", n, state)
		}
		time.Sleep(7*time.Second - time.Since(closed))
		if err := e.deleteGroup(group); err != nil {
			n, state, _ := e.groupMembers(group)
			return fmt.Errorf("DeleteGroups 7s after close: %v (%d members, %s)", err, n, state)
		}
		return nil
	})

	// SASL and ACLs.
	sasl := func(user string, stdin string, args ...string) (string, error) {
		argv := append([]string{bin, "-b", e.sasl.addr, "-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanisms=PLAIN",
			"-X", "sasl.username=" + user, "-X", "sasl.password=" + user + "-secret"}, args...)
		return runCmd(cmdSpec{argv: argv, stdin: stdin, timeout: 20 * time.Second})
	}
	const aclTopic = "eco-kcat-acl"
	e.s.check(tool, "SASL PLAIN metadata as alice: -L", func() error {
		out, err := sasl("alice", "", "-L")
		if err != nil {
			return err
		}
		return expectContains(out, "1 brokers:")
	})
	if err := e.createTopic(true, aclTopic, 1); err != nil {
		e.s.add(row{Tool: tool, Command: "(setup) create " + aclTopic + " as admin with kadm", Result: resultFail, Detail: err.Error()})
	}
	e.s.check(tool, "SASL: produce as alice without an ACL is refused", func() error {
		_, err := sasl("alice", "x\n", "-P", "-t", aclTopic)
		if err == nil {
			return fmt.Errorf("produce without an ACL succeeded")
		}
		if !strings.Contains(err.Error(), "uthoriz") {
			return fmt.Errorf("refused, but not for authorization: %v", err)
		}
		return nil
	})
	e.s.check(tool, "SASL: produce and consume as alice once ACLs allow WRITE/READ", func() error {
		if err := e.allowACL("User:alice", aclTopic, kadm.OpWrite, kadm.OpRead, kadm.OpDescribe); err != nil {
			return fmt.Errorf("setup: %v", err)
		}
		if _, err := sasl("alice", "ka:va\n", "-P", "-K:", "-t", aclTopic); err != nil {
			return err
		}
		out, err := sasl("alice", "", "-C", "-t", aclTopic, "-o", "beginning", "-e", "-f", "%k=%s\\n")
		if err != nil {
			return err
		}
		return expectContains(out, "ka=va")
	})
}
