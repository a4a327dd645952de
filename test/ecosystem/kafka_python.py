# kafka-python (Debian's python3-kafka) as a user writes it: one command
# per run, `python3 kafka_python.py BOOTSTRAP COMMAND ARGS...`; SASL PLAIN
# when KAFKA_USER is set. Prints what it found; exits non-zero (with the
# traceback) when the client raised.
import os
import sys
import time

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import (ACL, ACLFilter, ACLOperation, ACLPermissionType, ACLResourcePatternType,
                         ConfigResource, ConfigResourceType, NewPartitions, NewTopic, ResourcePattern,
                         ResourcePatternFilter, ResourceType)

bootstrap, command, args = sys.argv[1], sys.argv[2], sys.argv[3:]
common = {"bootstrap_servers": bootstrap, "request_timeout_ms": 15000}
if os.environ.get("KAFKA_USER"):
    common.update(security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
                  sasl_plain_username=os.environ["KAFKA_USER"],
                  sasl_plain_password=os.environ["KAFKA_USER"] + "-secret")


def admin():
    return KafkaAdminClient(client_id="eco-kafka-python", **common)


if command == "create-topic":
    admin().create_topics([NewTopic(args[0], num_partitions=int(args[1]), replication_factor=1)])
    print("created", args[0])
elif command == "list-topics":
    print(sorted(admin().list_topics()))
elif command == "describe-topic":
    print(admin().describe_topics([args[0]]))
elif command == "describe-cluster":
    print(admin().describe_cluster())
elif command == "describe-configs":
    print(admin().describe_configs([ConfigResource(ConfigResourceType.TOPIC, args[0])]))
elif command == "describe-broker-configs":
    print(admin().describe_configs([ConfigResource(ConfigResourceType.BROKER, args[0])]))
elif command == "alter-configs":
    name, value = args[1].split("=", 1)
    print(admin().alter_configs([ConfigResource(ConfigResourceType.TOPIC, args[0], configs={name: value})]))
    described = admin().describe_configs([ConfigResource(ConfigResourceType.TOPIC, args[0])])
    print(described)
elif command == "create-partitions":
    print(admin().create_partitions({args[0]: NewPartitions(int(args[1]))}))
elif command == "delete-topic":
    print(admin().delete_topics([args[0]]))
elif command == "produce":
    p = KafkaProducer(**common)
    for i in range(int(args[1])):
        p.send(args[0], key=b"key-%d" % i, value=b"value-%d" % i,
               headers=[("trace", b"t-%d" % i)]).get(timeout=15)
    p.flush()
    p.close()
    print("produced", args[1])
elif command == "produce-gzip":
    p = KafkaProducer(compression_type="gzip", acks="all", **common)
    for i in range(int(args[1])):
        p.send(args[0], key=b"gz-%d" % i, value=b"gzip-%d" % i).get(timeout=15)
    p.close()
    print("produced", args[1])
elif command == "offsets-for-times":
    c = KafkaConsumer(**common)
    parts = [TopicPartition(args[0], p) for p in c.partitions_for_topic(args[0])]
    print("beginning", c.beginning_offsets(parts))
    print("end", c.end_offsets(parts))
    print("times", c.offsets_for_times({tp: 0 for tp in parts}))
    c.close()
elif command == "assign-seek":
    c = KafkaConsumer(consumer_timeout_ms=10000, **common)
    tp = TopicPartition(args[0], 0)
    c.assign([tp])
    c.seek(tp, int(args[1]))
    m = next(c)
    print("offset", m.offset, m.key.decode(), m.value.decode())
    c.close()
elif command == "consume-group":
    topic, group, want = args[0], args[1], int(args[2])
    c = KafkaConsumer(topic, group_id=group, auto_offset_reset="earliest", enable_auto_commit=False,
                      consumer_timeout_ms=20000, **common)
    got = []
    for m in c:
        got.append("%s=%s %s" % (m.key.decode(), m.value.decode(), [(k, v.decode()) for k, v in m.headers]))
        if len(got) >= want:
            break
    c.commit()
    c.close()
    print("\n".join(got))
    if len(got) < want:
        sys.exit("consumed %d of %d records" % (len(got), want))
elif command == "list-groups":
    print(admin().list_consumer_groups())
elif command == "describe-group":
    print(admin().describe_consumer_groups([args[0]]))
elif command == "group-lag":
    topic, group = args[0], args[1]
    committed = admin().list_consumer_group_offsets(group)
    c = KafkaConsumer(**common)
    parts = [TopicPartition(topic, p) for p in c.partitions_for_topic(topic)]
    ends = c.end_offsets(parts)
    c.close()
    lag = sum(ends[tp] - (committed[tp].offset if tp in committed else 0) for tp in parts)
    print("lag", lag, "committed", {str(k): v.offset for k, v in committed.items()})
elif command == "delete-group":
    print(admin().delete_consumer_groups([args[0]]))
elif command == "create-acl":
    principal, topic = args[0], args[1]
    acl = ACL(principal=principal, host="*", operation=ACLOperation.READ, permission_type=ACLPermissionType.ALLOW,
              resource_pattern=ResourcePattern(ResourceType.TOPIC, topic, ACLResourcePatternType.LITERAL))
    result = admin().create_acls([acl])
    print(result)
    if result["failed"]:
        sys.exit("create_acls failed: %s" % result["failed"])
elif command == "describe-acls":
    acls, err = admin().describe_acls(ACLFilter(principal=None, host="*", operation=ACLOperation.ANY,
                                                 permission_type=ACLPermissionType.ANY,
                                                 resource_pattern=ResourcePatternFilter(ResourceType.ANY, None, ACLResourcePatternType.ANY)))
    print(acls, err)
elif command == "delete-acls":
    print(admin().delete_acls([ACLFilter(principal=args[0], host="*", operation=ACLOperation.ANY,
                                         permission_type=ACLPermissionType.ANY,
                                         resource_pattern=ResourcePatternFilter(ResourceType.TOPIC, args[1], ACLResourcePatternType.LITERAL))]))
else:
    sys.exit("unknown command " + command)
