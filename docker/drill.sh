#!/usr/bin/env bash
# `minibroker drill` against the docker-compose demo clusters
# (docker/compose.yaml): a (primary) and b, which mirrors topic demo from
# a with its static mirror from-a (docker/b.yaml).
#
#   make drill-docker     (builds minibroker:dev, then runs this)
#
# Topic demo is created on a with DRILL_PARTITIONS partitions before b
# starts; once b's mirror is MIRRORING, `minibroker drill` runs in a
# container on the clusters' network (Kafka a:9092 and b:9092, admin APIs
# on port 9644 of a's and b's addresses there), with --failback: canary on a, plan and `mirror stop`
# on b, canary on b, a mirrors b back (mirror drill-failback), plan and
# stop on a, canary on a. The script exits non-zero unless the drill
# exits 0 and its JSON report says it passed, with nothing lost and every
# partition written. Host ports are chosen by Docker (MB_*_PORT=0) and the
# compose project name is unique, so it runs beside `make demo` on a
# shared engine. Everything it creates (containers, networks, volumes) is
# removed when it ends, however it ends. Output: $DRILL_OUT (drill.json,
# drill.svg, drill.txt, broker logs on failure).
set -euo pipefail
cd "$(dirname "$0")/.."

PROJECT=${DRILL_PROJECT:-mbdrill$$}
IMAGE=${DRILL_IMAGE:-minibroker:dev}
OUT=${DRILL_OUT:-bin/drill}
PARTITIONS=${DRILL_PARTITIONS:-3}
DURATION=${DRILL_DURATION:-9s}
RATE=${DRILL_RATE:-30}
export MB_IMAGE=$IMAGE MB_A_KAFKA_PORT=0 MB_A_HTTP_PORT=0 MB_B_KAFKA_PORT=0 MB_B_HTTP_PORT=0 MB_C_KAFKA_PORT=0 MB_C_HTTP_PORT=0

if docker compose version >/dev/null 2>&1; then COMPOSE=(docker compose); else COMPOSE=(docker-compose); fi
compose() { "${COMPOSE[@]}" -p "$PROJECT" -f docker/compose.yaml "$@"; }
say() { printf '== %s\n' "$*"; }
fail() { printf 'DRILL FAILED: %s\n' "$*" >&2; exit 1; }
cid() { docker ps -aq --filter "label=com.docker.compose.project=$PROJECT" --filter "label=com.docker.compose.service=$1"; }
# run ARGS…: the image's minibroker (or --entrypoint …) in a throw-away
# container on the a–b network, with $OUT (world-writable: the image's
# user writes the report there) as /out.
run() { docker run --rm --label "minibroker-drill=$PROJECT" --network "${PROJECT}_ab" -v "$OUT_ABS:/out" "$@"; }
wait_healthy() {
	local svc=$1 i
	for i in $(seq 1 60); do
		[ "$(docker inspect -f '{{.State.Health.Status}}' "$(cid "$svc")" 2>/dev/null)" = healthy ] && return 0
		sleep 0.5
	done
	fail "$svc is not healthy after 30 s"
}

cleanup() {
	local rc=$?
	set +e
	if [ $rc != 0 ]; then
		for s in a b; do [ -n "$(cid $s)" ] && docker logs "$(cid $s)" >"$OUT/$s.log" 2>&1; done
	fi
	local ids
	ids=$(docker ps -aq --filter "label=minibroker-drill=$PROJECT")
	[ -n "$ids" ] && docker rm -fv $ids >/dev/null
	compose down -v --remove-orphans -t 2 >/dev/null 2>&1
	left=$(docker ps -aq --filter "label=com.docker.compose.project=$PROJECT")$(docker network ls -q --filter "label=com.docker.compose.project=$PROJECT")$(docker volume ls -q --filter "label=com.docker.compose.project=$PROJECT")
	[ -z "$left" ] || echo "drill: could not remove everything of project $PROJECT: $left" >&2
	if [ $rc = 0 ]; then echo "drill: PASSED; containers, networks and volumes of $PROJECT removed"; else echo "drill: FAILED (exit $rc); containers, networks and volumes of $PROJECT removed; logs in $OUT" >&2; fi
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

docker image inspect "$IMAGE" >/dev/null 2>&1 || fail "no image $IMAGE: run make docker (or make drill-docker)"
rm -rf "$OUT" && mkdir -p "$OUT" && chmod 0777 "$OUT"
OUT_ABS=$(cd "$OUT" && pwd)

say "project $PROJECT: a, then topic demo ($PARTITIONS partitions) on a, then b (mirrors demo from a)"
compose up -d a 2>&1 | sed 's/^/   /'
wait_healthy a
run --entrypoint /minibroker-demo "$IMAGE" offsets --brokers a:9092 --create "$PARTITIONS" >/dev/null
compose up -d b 2>&1 | sed 's/^/   /'
wait_healthy b
# The admin APIs by IP address: without a token they refuse a Host that
# is a DNS name (docs/ADMIN_API.md, DNS rebinding).
ip() { docker inspect -f "{{(index .NetworkSettings.Networks \"${PROJECT}_ab\").IPAddress}}" "$(cid "$1")"; }
A_ADMIN=$(ip a):9644
B_ADMIN=$(ip b):9644
run --entrypoint /minibroker-demo "$IMAGE" wait mirror --admin "$B_ADMIN" --name from-a --state MIRRORING --timeout 60s

say "minibroker drill --from a:9092 --to b:9092 --admin $B_ADMIN --mirror from-a --topics demo --failback --from-admin $A_ADMIN --duration $DURATION --rate $RATE"
set +e
run "$IMAGE" drill --from a:9092 --to b:9092 --admin "$B_ADMIN" --mirror from-a --topics demo \
	--failback --from-admin "$A_ADMIN" --duration "$DURATION" --rate "$RATE" \
	--report /out/drill.json --svg /out/drill.svg | tee "$OUT/drill.txt"
code=${PIPESTATUS[0]}
set -e
[ "$code" = 0 ] || fail "minibroker drill exited $code (see $OUT/drill.txt)"
[ -s "$OUT/drill.json" ] || fail "no report $OUT/drill.json"
# The report, checked without jq (the image and the host may not have it).
grep -q '"passed": true' "$OUT/drill.json" || fail "the report does not say passed"
grep -q '"lost_at_failover": \[\]' "$OUT/drill.json" || fail "records were lost at the failover"
grep -q '"lost_on_b": \[\]' "$OUT/drill.json" || fail "records were lost on the new primary"
written=$(grep -c '"acked": [1-9]' "$OUT/drill.json" || true)
[ "$written" = "$PARTITIONS" ] || fail "the canary wrote to $written partitions, want $PARTITIONS"
say "report: $OUT/drill.json, timeline: $OUT/drill.svg"
