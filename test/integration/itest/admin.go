package itest

import (
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/minibroker/minibroker/minibrokertest"
)

// KafkaCoordinatorTopics gives a cluster Kafka's default partition counts
// for __consumer_offsets, __transaction_state and __share_group_state
// (50 each), which
// minibrokertest lowers to 1 to keep start-up fast.
func KafkaCoordinatorTopics() []minibrokertest.Option {
	return []minibrokertest.Option{
		minibrokertest.Set("offsets.topic.num.partitions", "50"),
		minibrokertest.Set("transaction.state.log.num.partitions", "50"),
		minibrokertest.Set("share.coordinator.state.topic.num.partitions", "50"),
	}
}

func QuotaEntity(kv ...string) kadm.ClientQuotaEntity {
	var e kadm.ClientQuotaEntity
	for i := 0; i < len(kv); i += 2 {
		c := kadm.ClientQuotaEntityComponent{Type: kv[i]}
		if kv[i+1] != "<default>" {
			c.Name = kadm.StringPtr(kv[i+1])
		}
		e = append(e, c)
	}
	return e
}

func QuotaSet(e kadm.ClientQuotaEntity, kv ...any) kadm.AlterClientQuotaEntry {
	en := kadm.AlterClientQuotaEntry{Entity: e}
	for i := 0; i < len(kv); i += 2 {
		en.Ops = append(en.Ops, kadm.AlterClientQuotaOp{Key: kv[i].(string), Value: kv[i+1].(float64)})
	}
	return en
}
