package main

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// admin is a kadm client for setting up and checking what a tool did
// (never instead of the tool): on the SASL broker it is the super user.
func (e *env) admin(sasl bool) (*kadm.Client, func(), error) {
	cl, err := e.kgoClient(sasl)
	if err != nil {
		return nil, nil, err
	}
	return kadm.NewClient(cl), cl.Close, nil
}

// kgoClient is a kgo client of the PLAINTEXT broker, or of the SASL one
// as admin.
func (e *env) kgoClient(sasl bool) (*kgo.Client, error) {
	opts := []kgo.Opt{kgo.SeedBrokers(e.plain.addr), kgo.RequestTimeoutOverhead(5 * time.Second), kgo.RetryTimeout(10 * time.Second)}
	if sasl {
		opts = []kgo.Opt{kgo.SeedBrokers(e.sasl.addr), kgo.SASL(plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism()),
			kgo.RequestTimeoutOverhead(5 * time.Second), kgo.RetryTimeout(10 * time.Second)}
	}
	return kgo.NewClient(opts...)
}

func ctx10() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 10*time.Second)
}

// groupMembers is the number of members and the state of a group.
func (e *env) groupMembers(group string) (int, string, error) {
	adm, done, err := e.admin(false)
	if err != nil {
		return 0, "", err
	}
	defer done()
	ctx, cancel := ctx10()
	defer cancel()
	d, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		return 0, "", err
	}
	g := d[group]
	if g.Err != nil {
		return 0, "", g.Err
	}
	return len(g.Members), g.State, nil
}

// deleteGroup deletes group with kadm and returns the group's error.
func (e *env) deleteGroup(group string) error {
	adm, done, err := e.admin(false)
	if err != nil {
		return err
	}
	defer done()
	ctx, cancel := ctx10()
	defer cancel()
	r, err := adm.DeleteGroups(ctx, group)
	if err != nil {
		return err
	}
	return r[group].Err
}

// createTopic creates a topic with kadm (setup for a tool that reads).
func (e *env) createTopic(sasl bool, topic string, partitions int32) error {
	adm, done, err := e.admin(sasl)
	if err != nil {
		return err
	}
	defer done()
	ctx, cancel := ctx10()
	defer cancel()
	r, err := adm.CreateTopic(ctx, partitions, 1, nil, topic)
	if err != nil {
		return err
	}
	return r.Err
}

// allowACL gives principal op on a literal topic (and its group, for
// consumers) on the SASL broker.
func (e *env) allowACL(principal, topic string, ops ...kadm.ACLOperation) error {
	adm, done, err := e.admin(true)
	if err != nil {
		return err
	}
	defer done()
	ctx, cancel := ctx10()
	defer cancel()
	b := kadm.NewACLs().Allow(principal).AllowHosts("*").Topics(topic).Operations(ops...).ResourcePatternType(kadm.ACLPatternLiteral)
	res, err := adm.CreateACLs(ctx, b)
	if err != nil {
		return err
	}
	for _, r := range res {
		if r.Err != nil {
			return fmt.Errorf("create ACL: %v", r.Err)
		}
	}
	return nil
}

// groupLag is the summed lag of group as kadm computes it (committed
// offsets against end offsets).
func (e *env) groupLag(group string) (int64, error) {
	adm, done, err := e.admin(false)
	if err != nil {
		return 0, err
	}
	defer done()
	ctx, cancel := ctx10()
	defer cancel()
	l, err := adm.Lag(ctx, group)
	if err != nil {
		return 0, err
	}
	gl := l[group]
	if gl.Error() != nil {
		return 0, gl.Error()
	}
	return gl.Lag.Total(), nil
}
