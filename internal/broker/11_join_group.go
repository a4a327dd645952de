package broker

// JoinGroup, v0–v9 (classic consumer-group protocol).
//
// The response waits until the rebalance completes (all known members have
// rejoined, the rebalance timeout passed, or group.initial.rebalance.delay.ms
// for a group forming from Empty); only this request waits, other
// connections are served meanwhile. v4+ requires a known member id
// (KIP-394: an unknown member gets MEMBER_ID_REQUIRED and its id); v5+
// static membership (group.instance.id, FENCED_INSTANCE_ID); v9 tells a
// static leader rejoining a stable group to skip the assignment (KIP-814).
// v0 uses the session timeout as rebalance timeout, as Kafka does. The
// Reason (v8+) is accepted and ignored. group.max.size is not enforced.

import (
	"context"
	"net"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/config"
	"github.com/minibroker/minibroker/internal/coordinator"
	"github.com/minibroker/minibroker/internal/protocol"
)

// groupConfig maps the broker settings the group coordinator honours.
func groupConfig(cfg config.Config) coordinator.GroupConfig {
	ms := func(name string) time.Duration { return time.Duration(cfg.Int64(name)) * time.Millisecond }
	return coordinator.GroupConfig{
		MinSessionTimeout:     ms("group.min.session.timeout.ms"),
		MaxSessionTimeout:     ms("group.max.session.timeout.ms"),
		InitialRebalanceDelay: ms("group.initial.rebalance.delay.ms"),
		OffsetsRetention:      ms("offsets.retention.ms"),
		MaxMetadataSize:       4096, // offset.metadata.max.bytes

		ConsumerSessionTimeout:    ms("group.consumer.session.timeout.ms"),
		ConsumerHeartbeatInterval: ms("group.consumer.heartbeat.interval.ms"),
		ConsumerMaxSize:           int(cfg.Int32("group.consumer.max.size")),
		ConsumerAssignors:         consumerAssignorNames(strings.Split(cfg.String("group.consumer.assignors"), ",")),
		ConsumerMigrationPolicy:   cfg.String("group.consumer.migration.policy"),
	}
}

// consumerAssignorNames maps group.consumer.assignors (Kafka's class
// names or the assignors' names) to the names the coordinator knows:
// "uniform" and "range". Others are dropped (Kafka would load the class;
// minibroker has only these two).
func consumerAssignorNames(list []string) []string {
	var out []string
	for _, a := range list {
		switch strings.TrimSpace(a) {
		case "uniform", "org.apache.kafka.coordinator.group.assignor.UniformAssignor":
			out = append(out, "uniform")
		case "range", "org.apache.kafka.coordinator.group.assignor.RangeAssignor":
			out = append(out, "range")
		}
	}
	return out
}

// clientHost is the member's address as Kafka shows it ("/127.0.0.1").
func clientHost(r *protocol.Request) string {
	if r.Remote == nil {
		return ""
	}
	host, _, err := net.SplitHostPort(r.Remote.String())
	if err != nil {
		host = r.Remote.String()
	}
	return "/" + host
}

func strOrEmpty(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func (b *Broker) handleJoinGroup(ctx context.Context, r *protocol.Request) kmsg.Response {
	req := r.Body.(*kmsg.JoinGroupRequest)
	resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
	if b.shares.Exists(req.Group) {
		// A share group's id: Kafka's classicGroupJoin answers
		// INCONSISTENT_GROUP_PROTOCOL with no member id.
		resp.ErrorCode = kerr.InconsistentGroupProtocol.Code
		if r.Version < 7 {
			resp.Protocol = kmsg.StringPtr("")
		}
		return resp
	}
	jr := coordinator.JoinRequest{
		Group: req.Group, MemberID: req.MemberID, InstanceID: strOrEmpty(req.InstanceID),
		ClientID: r.ClientID, ClientHost: clientHost(r), ProtocolType: req.ProtocolType,
		SessionTimeout:         time.Duration(req.SessionTimeoutMillis) * time.Millisecond,
		RebalanceTimeout:       time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond,
		RequireKnownMemberID:   r.Version >= 4,
		SupportsSkipAssignment: r.Version >= 9,
	}
	if r.Version == 0 {
		jr.RebalanceTimeout = jr.SessionTimeout
	}
	for _, p := range req.Protocols {
		jr.Protocols = append(jr.Protocols, coordinator.Protocol{Name: p.Name, Metadata: append([]byte{}, p.Metadata...)})
	}
	res := b.groups.Join(ctx, jr)
	resp.ErrorCode = errorCode(res.Err)
	resp.Generation, resp.MemberID, resp.LeaderID = res.Generation, res.MemberID, res.Leader
	if res.Err == nil {
		pt, p := res.ProtocolType, res.Protocol
		resp.ProtocolType, resp.Protocol = &pt, &p
		resp.SkipAssignment = res.SkipAssignment
	} else if r.Version < 7 {
		empty := ""
		resp.Protocol = &empty
	}
	for _, m := range res.Members {
		rm := kmsg.NewJoinGroupResponseMember()
		rm.MemberID, rm.ProtocolMetadata = m.MemberID, m.Metadata
		if m.InstanceID != "" {
			inst := m.InstanceID
			rm.InstanceID = &inst
		}
		resp.Members = append(resp.Members, rm)
	}
	return resp
}
