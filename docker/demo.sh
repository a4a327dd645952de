#!/usr/bin/env bash
# The minibroker failover demo: three single-broker clusters in containers
# (docker/compose.yaml: b mirrors a, c mirrors b), an application that
# writes numbered records and reads them as a consumer group, a network
# cut, the death of the primary, a failover, a failback, and a ledger that
# says whether any acknowledged record was lost or duplicated.
#
#   make demo            (builds minibroker:dev and bin/minibroker-demo, then runs this)
#
# Read it top to bottom: each step prints what it does and the commands an
# operator would type. It exits non-zero when an acknowledged record is
# missing or stored or read twice, or when any check fails. Everything it
# creates (containers, networks, volumes) is removed when it ends, however
# it ends. Output: bin/demo/ (ledgers, log dumps, timeline.svg).
#
# DEMO_PORTS=docker (what `make test` runs, through make demo-if-docker):
# no fixed host port. Docker chooses the published ports (MB_*_PORT=0)
# and the project name is unique, so the demo runs while another program
# holds 19091–19093 or 19641–19643, and beside a `make demo`. The host
# reaches the HTTP listeners through the ports Docker chose (docker port);
# the clients of the HOST Kafka listeners, which advertise
# localhost:19091 (b: 19092, c: 19093), run in a container sharing that
# broker's network namespace, where localhost:1909n is that listener.
# Without it the documented ports are published and used from the host.
set -euo pipefail
cd "$(dirname "$0")/.."

PORTS=${DEMO_PORTS:-fixed}
case $PORTS in
fixed) PROJECT=${DEMO_PROJECT:-mbdemo} ;;
docker)
	PROJECT=${DEMO_PROJECT:-mbdemo$$}
	export MB_A_KAFKA_PORT=0 MB_A_HTTP_PORT=0 MB_B_KAFKA_PORT=0 MB_B_HTTP_PORT=0 MB_C_KAFKA_PORT=0 MB_C_HTTP_PORT=0
	;;
*) echo "DEMO_PORTS=$PORTS: want fixed or docker" >&2; exit 2 ;;
esac
IMAGE=${DEMO_IMAGE:-minibroker:dev}
export MB_IMAGE=$IMAGE # the image docker/compose.yaml runs
OUT=${DEMO_OUT:-bin/demo}
DEMO=${DEMO_TOOL:-bin/minibroker-demo}
RATE=${DEMO_RATE:-200} # records/s of the application's producer
GROUP=demo-app

if docker compose version >/dev/null 2>&1; then COMPOSE=(docker compose); else COMPOSE=(docker-compose); fi
compose() { "${COMPOSE[@]}" -p "$PROJECT" -f docker/compose.yaml "$@"; }

# ---- narration and helpers ----------------------------------------------
T0=$(date +%s)
say() { printf '\n== [%3ds] %s\n' "$(($(date +%s) - T0))" "$*"; }
note() { printf '   %s\n' "$*"; }
show() { printf '$ %s\n' "$*"; }
now_ms() { if [ -n "${EPOCHREALTIME:-}" ]; then local t=${EPOCHREALTIME/[.,]/}; echo "${t:0:13}"; else date +%s%3N; fi; }
event() { echo "$(now_ms) $*" >>"$OUT/events.txt"; }
fail() { printf '\nDEMO FAILED: %s\n' "$*" >&2; exit 1; }

# cid SERVICE: its container (compose labels; faster than compose ps, and the same with compose v1 and v2).
cid() { docker ps -aq --filter "label=com.docker.compose.project=$PROJECT" --filter "label=com.docker.compose.service=$1"; }
# mb SERVICE ARGS…: the minibroker CLI inside that cluster's container
# (the admin API is on its 127.0.0.1:9644; the image has no shell).
mb() {
	local svc=$1
	shift
	show "minibroker $*        # on $svc"
	docker exec "$(cid "$svc")" /minibroker "$@"
}
mbq() { local svc=$1; shift; docker exec "$(cid "$svc")" /minibroker "$@"; }
# admin SERVICE: the host address of its HTTP listener (with DEMO_PORTS=docker
# asked each time: a restarted container may be given another port).
admin() {
	if [ "$PORTS" = docker ]; then
		docker port "$(cid "$1")" 9644/tcp | head -1
		return
	fi
	case $1 in a) echo 127.0.0.1:19641 ;; b) echo 127.0.0.1:19642 ;; c) echo 127.0.0.1:19643 ;; esac
}
# hostk SERVICE ARGS…: minibroker-demo as a client of SERVICE's HOST
# listener (localhost:19091 for a, 19092 b, 19093 c): on the host through
# the published port, or with DEMO_PORTS=docker in a container sharing
# SERVICE's network namespace, where that address is the listener itself.
hostk() {
	local svc=$1
	shift
	if [ "$PORTS" = docker ]; then
		docker run --rm --label "minibroker-demo=$PROJECT" --network "container:$(cid "$svc")" \
			--entrypoint /minibroker-demo "$IMAGE" "$@"
	else
		"$DEMO" "$@"
	fi
}
# client NETWORK ARGS…: minibroker-demo in a container on that network,
# connecting through the clusters' container listeners (a:9092, b:9092).
# The demo's own checks (hostk … offsets/wait) go through the HOST
# listeners (localhost:19091…).
client() {
	local net=$1
	shift
	docker run --rm --label "minibroker-demo=$PROJECT" --network "${PROJECT}_$net" --entrypoint /minibroker-demo "$IMAGE" "$@"
}
# start_app NAME NETWORK ARGS…: a long-running client container.
start_app() {
	local name=$1 net=$2
	shift 2
	docker run -d --name "$PROJECT-$name" --label "minibroker-demo=$PROJECT" --network "${PROJECT}_$net" \
		--entrypoint /minibroker-demo "$IMAGE" "$@" >/dev/null
}
# stop_app NAME: SIGTERM (the producer flushes, the consumer drains and
# commits), then its ledger goes to $OUT/NAME.json.
stop_app() {
	local name=$1 code
	docker stop -t 40 "$PROJECT-$name" >/dev/null
	docker logs "$PROJECT-$name" >"$OUT/$name.json" 2>>"$OUT/clients.log"
	code=$(docker inspect -f '{{.State.ExitCode}}' "$PROJECT-$name")
	docker rm -v "$PROJECT-$name" >/dev/null
	[ "$code" = 0 ] || fail "$name exited with $code (see $OUT/clients.log)"
}
json_field() { sed -nE "s/.*\"$2\":(-?[0-9]+).*/\\1/p" "$1" | head -1; }
wait_healthy() {
	local svc=$1 i
	for i in $(seq 1 60); do
		[ "$(docker inspect -f '{{.State.Health.Status}}' "$(cid "$svc")" 2>/dev/null)" = healthy ] && return 0
		sleep 0.5
	done
	fail "$svc is not healthy after 30 s"
}
dump() { # dump SERVICE FILE: dump-log --json of the demo partition on a running cluster
	docker exec "$(cid "$1")" /minibroker dump-log --json --print-data /data/demo-0 >"$2" 2>>"$OUT/dump-log.err" || true
	[ -s "$2" ] || fail "dump-log on $1 printed nothing (see $OUT/dump-log.err)"
}
barriers() { # barriers SERVICE: the MIRROR_PID_RESET batches in its log, as dump-log prints them
	docker exec "$(cid "$1")" /minibroker dump-log /data/demo-0 2>/dev/null | grep -B1 mirrorPidReset || true
}

RECORDER=
cleanup() {
	local rc=$?
	set +e
	[ -n "$RECORDER" ] && kill "$RECORDER" 2>/dev/null && wait "$RECORDER" 2>/dev/null
	local ids
	ids=$(docker ps -aq --filter "label=minibroker-demo=$PROJECT")
	[ -n "$ids" ] && docker rm -fv $ids >/dev/null
	compose down -v --remove-orphans -t 2 >/dev/null 2>&1
	if [ $rc = 0 ]; then echo "demo: containers, networks and volumes removed"; else echo "demo: FAILED (exit $rc); containers, networks and volumes removed; logs in $OUT" >&2; fi
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

docker image inspect "$IMAGE" >/dev/null 2>&1 || fail "no image $IMAGE: run make docker (or make demo)"
[ -x "$DEMO" ] || fail "no $DEMO: run make demo"
compose down -v --remove-orphans -t 1 >/dev/null 2>&1 || true # a previous run killed hard
rm -rf "$OUT" && mkdir -p "$OUT" && : >"$OUT/events.txt"

# ---- 1 ---------------------------------------------------------------------
say "1. Three clusters: a (primary), b mirrors a, c mirrors b. Healthchecks gate the start order."
show "${COMPOSE[*]} -p $PROJECT -f docker/compose.yaml up -d"
compose up -d a 2>&1 | sed 's/^/   /'
wait_healthy a
note "a is healthy (its HEALTHCHECK is 'minibroker healthcheck': ApiVersions on its listener); creating topic demo on a"
hostk a offsets --brokers localhost:19091 --create 1 >/dev/null
compose up -d 2>&1 | sed 's/^/   /'
wait_healthy b
wait_healthy c
"$DEMO" timeline record --out "$OUT/samples.jsonl" --target "a=http://$(admin a)/metrics" \
	--target "b=http://$(admin b)/metrics" --target "c=http://$(admin c)/metrics" &
RECORDER=$!
event "up"
note "b and c start their static mirrors (docker/b.yaml, docker/c.yaml) by themselves; waiting for MIRRORING"
"$DEMO" wait mirror --admin "$(admin b)" --name from-a --state MIRRORING --timeout 60s
"$DEMO" wait mirror --admin "$(admin c)" --name from-b --state MIRRORING --timeout 60s
mb b mirror describe from-a
mb c mirror describe from-b
note "listeners: each client is told the address of the listener it came through, and produces and consumes there"
# (all at once: each is a client of its own; the outputs are printed in order)
pids=()
client ab roundtrip --brokers a:9092 --tag container-client --expect-advertised a:9092 >"$OUT/rt-1" 2>&1 &
pids+=($!)
client bc roundtrip --brokers c:9092 --tag container-client --expect-advertised c:9092 >"$OUT/rt-2" 2>&1 &
pids+=($!)
n=0
for svc in a b c; do
	n=$((n + 1))
	hostk "$svc" roundtrip --brokers "localhost:1909$n" --tag host-client --expect-advertised "localhost:1909$n" >"$OUT/rt-h$n" 2>&1 &
	pids+=($!)
done
client ab roundtrip --brokers a:19091 --tag wrong-listener --expect-advertised localhost:19091 --timeout 5s >"$OUT/rt-wrong" 2>&1 &
WRONG=$!
for p in "${pids[@]}"; do wait "$p" || true; done
if wait "$WRONG"; then fail "a client on the wrong listener produced"; fi
for f in rt-1 rt-2 rt-h1 rt-h2 rt-h3; do
	sed 's/^/   /' "$OUT/$f"
	grep -q 'read them back' "$OUT/$f" || fail "round trip $f failed"
done
note "negative control: a container client that comes in through a's HOST listener (a:19091) is told localhost:19091,"
note "which inside its container is itself: it cannot produce (the classic Kafka-in-Docker mistake)"
sed 's/^/   /' "$OUT/rt-wrong"

# ---- 2 ---------------------------------------------------------------------
say "2. The application on a: an idempotent producer of numbered records ($RATE/s) and consumer group $GROUP"
start_app produce-1 ab produce --brokers a:9092 --from 1 --rate "$RATE"
start_app consume-1 ab consume --brokers a:9092 --group "$GROUP"
event "app on a"
sleep 3
mb b mirror describe from-a

# ---- 3 ---------------------------------------------------------------------
say "3. Cut the network between a and b for 6 s: a keeps taking writes, b falls behind"
B=$(cid b)
show "docker network disconnect ${PROJECT}_ab <b>"
docker network disconnect "${PROJECT}_ab" "$B"
event "cut a-b"
sleep 6
A_END=$("$DEMO" metric --url "http://$(admin a)/metrics")
B_END=$("$DEMO" metric --url "http://$(admin b)/metrics")
note "b reports the source error (c, on the other network, keeps mirroring b):"
mb b mirror describe from-a
note "b's LAG is measured against the source high watermark b last saw, which cannot move while a is unreachable;"
note "from the metrics of both sides: a's log end $A_END, b's $B_END: b is $((A_END - B_END)) records behind"
[ $((A_END - B_END)) -gt 0 ] || fail "b did not fall behind during the cut"
show "docker network connect ${PROJECT}_ab <b>"
docker network connect --alias b "${PROJECT}_ab" "$B"
event "reconnect"
"$DEMO" wait mirror --admin "$(admin b)" --name from-a --state MIRRORING --caught-up --timeout 60s
note "b caught up:"
mb b mirror describe from-a
note "both logs, batch by batch (dump-log --json): same bytes at every offset, no gap, no second copy"
dump a "$OUT/cut-a.jsonl"
dump b "$OUT/cut-b.jsonl"
"$DEMO" check-logs "$OUT/cut-a.jsonl" "$OUT/cut-b.jsonl" | sed 's/^/   /' || fail "the mirror did not resume cleanly after the cut"

# ---- 4 ---------------------------------------------------------------------
say "4. a dies; b takes over (mirror stop = failover); the application moves to b"
note "mirroring is asynchronous: what a acknowledged and b had not fetched when a dies is lost (mirror describe"
note "counts it). So that the ledger can demand zero loss, the application stops first and b catches up; then a is killed."
stop_app produce-1
stop_app consume-1
NEXT=$(json_field "$OUT/produce-1.json" next)
A_COMMITTED=$(hostk a offsets --brokers localhost:19091 --group "$GROUP" | sed -nE 's/.*"committed":(-?[0-9]+).*/\1/p')
"$DEMO" wait mirror --admin "$(admin b)" --name from-a --state MIRRORING --caught-up --timeout 30s
note "group $GROUP committed offset $A_COMMITTED on a; waiting for the mirror's group-offset sync to copy it to b (every 10 s)"
hostk b wait group --brokers localhost:19092 --group "$GROUP" --committed "$A_COMMITTED" --timeout 30s
show "${COMPOSE[*]} kill a"
compose kill a 2>&1 | sed 's/^/   /'
event "kill a"
event "mirror stop on b"
mb b mirror stop from-a --topics demo --wait
event "b writable"
start_app produce-2 bc produce --brokers b:9092 --from "$NEXT" --rate "$RATE"
start_app consume-2 bc consume --brokers b:9092 --group "$GROUP"
event "app on b"
sleep 3
note "the MIRROR_PID_RESET barrier b wrote where its mirrored data ends (dump-log decodes it):"
show "minibroker dump-log /data/demo-0 | grep -B1 mirrorPidReset        # on b"
barriers b | sed 's/^/   /'
B_END=$(hostk b offsets --brokers localhost:19092 | sed -nE 's/.*"end":(-?[0-9]+).*/\1/p')
"$DEMO" wait mirror --admin "$(admin c)" --name from-b --state MIRRORING --timeout 30s
note "c mirrors b, so the barrier reached c through the chain:"
show "minibroker dump-log /data/demo-0 | grep -B1 mirrorPidReset        # on c"
hostk c wait end --brokers localhost:19093 --end "$B_END" --timeout 30s
barriers c >"$OUT/barriers-c.txt"
sed 's/^/   /' "$OUT/barriers-c.txt"
grep -q mirrorPidReset "$OUT/barriers-c.txt" || fail "no barrier on c"

# ---- 5 ---------------------------------------------------------------------
say "5. a comes back; a forgotten client writes to it; a mirrors b (failback), which cuts those records; then the application moves back to a"
show "${COMPOSE[*]} start a"
compose start a 2>&1 | sed 's/^/   /'
wait_healthy a
event "a back"
note "a does not know it was failed over: its topic is writable, and a stale client on the host writes 20 records to it"
show "minibroker-demo produce --brokers localhost:19091 --prefix stray- --count 20"
hostk a produce --brokers localhost:19091 --prefix stray- --count 20 --rate 100 >"$OUT/produce-stray.json" 2>>"$OUT/clients.log"
mb a mirror create from-b --source b:9092
note "mirror start refuses to cut a's stray records silently: --dry-run shows what it would remove, --allow-truncate removes it"
mb a mirror start from-b --topics demo --dry-run
mb a mirror start from-b --topics demo --allow-truncate
event "a mirrors b"
"$DEMO" wait mirror --admin "$(admin a)" --name from-b --state MIRRORING --caught-up --timeout 60s
mb a mirror describe from-b
STRAY_LEFT=$(mbq a dump-log --print-data /data/demo-0 2>/dev/null | grep -c 'stray-' || true)
note "records from the stray client still on a after PREPARING truncated to where a and b diverge: $STRAY_LEFT"
[ "$STRAY_LEFT" = 0 ] || fail "failback left $STRAY_LEFT stray records on a"
sleep 3
note "fail back: the application stops on b, a catches up, the group's offset is synced to a, a stops mirroring"
stop_app produce-2
stop_app consume-2
NEXT=$(json_field "$OUT/produce-2.json" next)
B_COMMITTED=$(hostk b offsets --brokers localhost:19092 --group "$GROUP" | sed -nE 's/.*"committed":(-?[0-9]+).*/\1/p')
"$DEMO" wait mirror --admin "$(admin a)" --name from-b --state MIRRORING --caught-up --timeout 30s
hostk a wait group --brokers localhost:19091 --group "$GROUP" --committed "$B_COMMITTED" --timeout 30s
event "mirror stop on a"
mb a mirror stop from-b --topics demo --wait
event "a writable"
start_app produce-3 ab produce --brokers a:9092 --from "$NEXT" --rate "$RATE"
start_app consume-3 ab consume --brokers a:9092 --group "$GROUP"
event "app on a"
note "b mirrors a again (its mirror from-a, restarted): the chain a → b → c is back"
mb b mirror start from-a --topics demo
"$DEMO" wait mirror --admin "$(admin b)" --name from-a --state MIRRORING --timeout 60s
sleep 5
stop_app produce-3
stop_app consume-3
"$DEMO" wait mirror --admin "$(admin b)" --name from-a --state MIRRORING --caught-up --timeout 30s
"$DEMO" wait mirror --admin "$(admin c)" --name from-b --state MIRRORING --caught-up --timeout 30s
event "end"

# ---- 6 ---------------------------------------------------------------------
say "6. Report"
kill "$RECORDER" && wait "$RECORDER" || true
RECORDER=
dump a "$OUT/final-a.jsonl"
dump b "$OUT/final-b.jsonl"
dump c "$OUT/final-c.jsonl"
note "a and b, then b and c, batch by batch: identical, same end, no gap, no second copy"
"$DEMO" check-logs --same-end "$OUT/final-a.jsonl" "$OUT/final-b.jsonl" | sed 's/^/   /' || fail "a and b differ"
"$DEMO" check-logs --same-end "$OUT/final-b.jsonl" "$OUT/final-c.jsonl" | sed 's/^/   /' || fail "b and c differ"
note "MIRROR_PID_RESET barriers in a's log (b's failover, then a's failback):"
barriers a | sed 's/^/   /'
"$DEMO" timeline render --samples "$OUT/samples.jsonl" --events "$OUT/events.txt" --out "$OUT/timeline.svg"
note "timeline: $OUT/timeline.svg"
echo
"$DEMO" report --dir "$OUT" --log "$OUT/final-a.jsonl" | sed 's/^/   /' || fail "acknowledged records lost or duplicated"
say "done"
