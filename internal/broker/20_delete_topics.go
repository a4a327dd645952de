package broker

// DeleteTopics, v1–v6.
//
// Topics by name, or (v6) by name or ID. Deletion is immediate: the topic
// leaves the registry, then its partition directories are removed.
// delete.topic.enable=false answers TOPIC_DELETION_DISABLED.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/protocol"
)

func (b *Broker) handleDeleteTopics(_ context.Context, r *protocol.Request) kmsg.Response {
	req := r.Body.(*kmsg.DeleteTopicsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	type target struct {
		name *string
		id   [16]byte
	}
	var targets []target
	if req.Version >= 6 {
		for _, t := range req.Topics {
			targets = append(targets, target{t.Topic, t.TopicID})
		}
	} else {
		for _, n := range req.TopicNames {
			targets = append(targets, target{name: &n})
		}
	}
	for _, tg := range targets {
		st := kmsg.NewDeleteTopicsResponseTopic()
		st.Topic, st.TopicID = tg.name, tg.id
		var (
			t  *Topic
			ok bool
		)
		switch {
		case tg.name != nil && *tg.name != "":
			t, ok = b.Topic(*tg.name)
			if !ok {
				st.ErrorCode = kerr.UnknownTopicOrPartition.Code
			}
		case tg.id != [16]byte{}:
			t, ok = b.topicByID(tg.id)
			if !ok {
				st.ErrorCode = kerr.UnknownTopicID.Code
			}
		default:
			st.ErrorCode = kerr.InvalidRequest.Code
		}
		if ok {
			name := t.Name
			st.Topic, st.TopicID = &name, t.ID
			var err error
			if !b.cfg.Bool("delete.topic.enable") {
				err = errTopicDeletionDisabled
			} else {
				err = b.DeleteTopic(t.Name)
			}
			st.ErrorCode = errorCode(err)
			if req.Version >= 5 {
				st.ErrorMessage = errorMessage(err)
			}
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}
