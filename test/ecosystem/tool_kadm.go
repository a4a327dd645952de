package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// kadmSuite: the admin calls kcl and rpk make (both are built on
// franz-go's kadm and kmsg), made with kadm itself here because neither
// tool can be had from the Go module proxy: quotas, reassignments, leader
// election, the version a tool guesses, dynamic broker configs, SCRAM
// users, log dirs, producers, transactions, and the newer admin APIs.
func kadmSuite(e *env) {
	const tool = "kadm (as kcl/rpk)"
	kcl, err := e.kgoClient(false)
	if err != nil {
		e.s.add(row{Tool: tool, Command: "client", Result: resultFail, Detail: err.Error()})
		return
	}
	defer kcl.Close()
	adm := kadm.NewClient(kcl)
	const topic = "eco-kadm"
	if err := e.createTopic(false, topic, 2); err != nil {
		e.s.add(row{Tool: tool, Command: "(setup) create " + topic, Result: resultFail, Detail: err.Error()})
	}
	ctx := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.Background(), 15*time.Second)
	}

	e.s.check(tool, "ApiVersions: the Kafka version a tool guesses (kversion)", func() error {
		c, cancel := ctx()
		defer cancel()
		vs, err := adm.ApiVersions(c)
		if err != nil {
			return err
		}
		for _, v := range vs {
			if v.Err != nil {
				return v.Err
			}
			guess := v.VersionGuess()
			if !strings.HasPrefix(guess, "v4") && !strings.HasPrefix(guess, "v3") {
				return fmt.Errorf("guessed %s; against Kafka 4.0: %s", guess, missingAgainst(v.Raw(), kversion.V4_0_0()))
			}
		}
		return nil
	})
	e.s.check(tool, "AlterClientQuotas producer_byte_rate user=eco (kcl quota alter, rpk cluster quotas alter)", func() error {
		c, cancel := ctx()
		defer cancel()
		user := "eco"
		res, err := adm.AlterClientQuotas(c, []kadm.AlterClientQuotaEntry{{
			Entity: kadm.ClientQuotaEntity{{Type: "user", Name: &user}},
			Ops:    []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: 1048576}},
		}})
		if err != nil {
			return err
		}
		for _, r := range res {
			if r.Err != nil {
				return fmt.Errorf("%v %s", r.Err, r.ErrMessage)
			}
		}
		return nil
	})
	e.s.check(tool, "DescribeClientQuotas (kcl quota describe, rpk cluster quotas describe)", func() error {
		c, cancel := ctx()
		defer cancel()
		d, err := adm.DescribeClientQuotas(c, false, []kadm.DescribeClientQuotaComponent{{Type: "user", MatchType: kmsg.QuotasMatchTypeAny}})
		if err != nil {
			return err
		}
		if !strings.Contains(fmt.Sprint(d), "producer_byte_rate") {
			return fmt.Errorf("the quota set above is not described: %v", d)
		}
		return nil
	})
	e.s.check(tool, "ElectLeaders preferred (kcl admin elect-leaders)", func() error {
		c, cancel := ctx()
		defer cancel()
		r, err := adm.ElectLeaders(c, kadm.ElectPreferredReplica, kadm.TopicsSet{topic: {0: {}, 1: {}}})
		if err != nil {
			return err
		}
		for _, ps := range r {
			for _, p := range ps {
				if p.Err != nil && !errors.Is(p.Err, kerr.ElectionNotNeeded) {
					return fmt.Errorf("partition %d: %v", p.Partition, p.Err)
				}
			}
		}
		return nil
	})
	e.s.check(tool, "AlterPartitionAssignments onto this node (kcl admin partas alter)", func() error {
		c, cancel := ctx()
		defer cancel()
		var req kadm.AlterPartitionAssignmentsReq
		req.Assign(topic, 0, []int32{0})
		r, err := adm.AlterPartitionAssignments(c, req)
		if err != nil {
			return err
		}
		return r.Error()
	})
	e.s.check(tool, "ListPartitionReassignments (kcl admin partas list)", func() error {
		c, cancel := ctx()
		defer cancel()
		_, err := adm.ListPartitionReassignments(c, kadm.TopicsSet{topic: {0: {}}})
		return err
	})
	e.s.check(tool, "DescribeQuorum (kcl admin describe-quorum, rpk cluster ...)", func() error {
		c, cancel := ctx()
		defer cancel()
		req := kmsg.NewPtrDescribeQuorumRequest()
		rt := kmsg.NewDescribeQuorumRequestTopic()
		rt.Topic = "__cluster_metadata"
		rp := kmsg.NewDescribeQuorumRequestTopicPartition()
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(c, kcl)
		if err != nil {
			return err
		}
		return kerr.ErrorForCode(resp.ErrorCode)
	})
	e.s.check(tool, "DescribeTopicPartitions (Kafka 3.8+ admin clients)", func() error {
		c, cancel := ctx()
		defer cancel()
		req := kmsg.NewPtrDescribeTopicPartitionsRequest()
		rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
		rt.Topic = topic
		req.Topics = append(req.Topics, rt)
		req.ResponsePartitionLimit = 10
		resp, err := req.RequestWith(c, kcl)
		if err != nil {
			return err
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 2 {
			return fmt.Errorf("answer %+v", resp.Topics)
		}
		return kerr.ErrorForCode(resp.Topics[0].ErrorCode)
	})
	e.s.check(tool, "IncrementalAlterConfigs BROKER log.retention.ms (kcl admin configs alter --broker)", func() error {
		c, cancel := ctx()
		defer cancel()
		v := "172800000"
		r, err := adm.AlterBrokerConfigs(c, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "log.retention.ms", Value: &v}}, 0)
		if err != nil {
			return err
		}
		for _, x := range r {
			if x.Err != nil {
				return fmt.Errorf("%v %s", x.Err, x.ErrMessage)
			}
		}
		return nil
	})
	e.s.check(tool, "DescribeConfigs GROUP resource (Kafka 4 group configs)", func() error {
		c, cancel := ctx()
		defer cancel()
		req := kmsg.NewPtrDescribeConfigsRequest()
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType = kmsg.ConfigResourceTypeGroupConfig
		rr.ResourceName = "eco-kadm-g"
		req.Resources = append(req.Resources, rr)
		resp, err := req.RequestWith(c, kcl)
		if err != nil {
			return err
		}
		if len(resp.Resources) != 1 {
			return fmt.Errorf("%d resources answered", len(resp.Resources))
		}
		return kerr.ErrorForCode(resp.Resources[0].ErrorCode)
	})
	e.s.check(tool, "DescribeAllLogDirs (kcl admin logdirs describe)", func() error {
		c, cancel := ctx()
		defer cancel()
		d, err := adm.DescribeAllLogDirs(c, nil)
		if err != nil {
			return err
		}
		var first error
		n := 0
		d.Each(func(l kadm.DescribedLogDir) {
			n++
			if l.Err != nil && first == nil {
				first = fmt.Errorf("%s: %v", l.Dir, l.Err)
			}
		})
		if first == nil && n == 0 {
			first = fmt.Errorf("no log dir described")
		}
		return first
	})
	e.s.check(tool, "DescribeProducers after an idempotent produce (kcl admin describe-producers)", func() error {
		cl, err := kgo.NewClient(kgo.SeedBrokers(e.plain.addr), kgo.DefaultProduceTopic(topic))
		if err != nil {
			return err
		}
		defer cl.Close()
		c, cancel := ctx()
		defer cancel()
		if err := cl.ProduceSync(c, &kgo.Record{Value: []byte("x")}).FirstErr(); err != nil {
			return err
		}
		d, err := adm.DescribeProducers(c, kadm.TopicsSet{topic: {0: {}, 1: {}}})
		if err != nil {
			return err
		}
		n := 0
		for _, t := range d {
			for _, p := range t.Partitions {
				if p.Err != nil {
					return p.Err
				}
				n += len(p.ActiveProducers)
			}
		}
		if n != 1 {
			return fmt.Errorf("%d active producers described, want 1", n)
		}
		return nil
	})
	e.s.check(tool, "ListTransactions (kcl admin txn list)", func() error {
		c, cancel := ctx()
		defer cancel()
		_, err := adm.ListTransactions(c, nil, nil)
		return err
	})
	e.s.check(tool, "GetTelemetrySubscriptions (KIP-714 clients)", func() error {
		c, cancel := ctx()
		defer cancel()
		req := kmsg.NewPtrGetTelemetrySubscriptionsRequest()
		resp, err := req.RequestWith(c, kcl)
		if err != nil {
			return err
		}
		return kerr.ErrorForCode(resp.ErrorCode)
	})

	sadm, sdone, err := e.admin(true)
	if err != nil {
		e.s.add(row{Tool: tool, Command: "SASL client", Result: resultFail, Detail: err.Error()})
		return
	}
	defer sdone()
	e.s.check(tool, "SASL: AlterUserSCRAMs + DescribeUserSCRAMs (kcl admin user-scram, rpk security user create)", func() error {
		c, cancel := ctx()
		defer cancel()
		r, err := sadm.AlterUserSCRAMs(c, nil, []kadm.UpsertSCRAM{{User: "eco", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "eco-secret"}})
		if err != nil {
			return err
		}
		if err := r.Error(); err != nil {
			return err
		}
		d, err := sadm.DescribeUserSCRAMs(c, "eco")
		if err != nil {
			return err
		}
		if len(d["eco"].CredInfos) != 1 {
			return fmt.Errorf("described %+v", d["eco"])
		}
		return nil
	})
}

// missingAgainst lists the APIs ref serves that the broker's ApiVersions
// answer lacks, or serves only up to a lower version.
func missingAgainst(resp *kmsg.ApiVersionsResponse, ref *kversion.Versions) string {
	have := kversion.FromApiVersionsResponse(resp)
	var out []string
	ref.EachMaxKeyVersion(func(k, v int16) {
		name := kmsg.NameForKey(k)
		switch got, ok := have.LookupMaxKeyVersion(k); {
		case !ok:
			out = append(out, fmt.Sprintf("%s (%d) missing", name, k))
		case got < v:
			out = append(out, fmt.Sprintf("%s (%d) up to v%d, Kafka v%d", name, k, got, v))
		}
	})
	if len(out) == 0 {
		return "nothing missing"
	}
	return strings.Join(out, ", ")
}
