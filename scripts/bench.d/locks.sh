# shellcheck shell=bash
# shellcheck disable=SC2154 # tmp, root, gmp, ROUNDS ... come from bench.sh, which sources this file
# Lock traffic for `make bench` (sourced by scripts/bench.sh).
#
# The proxy runs with lock rules, so every scenario above also pays for
# them: each command's keys are looked up in Valkey's key specs and matched
# against the patterns. Then cmd/lockbench measures what valkey-benchmark
# cannot (a release must come from the connection that acquired):
#   release  acquire+release cycles through the proxy (SET NX PX, DEL) against
#            the same token-checked scripts sent directly to Valkey;
#   scripted the same cycles against a client that sends those scripts itself
#            through the same proxy (on a key no rule matches): what the
#            rewrite costs beyond the hop — safe release's goal (>= 0.9);
#   transit  the same two round trips on a key no rule matches, through the
#            proxy and directly: the hop's share of release's ratio;
#   fenced   a holder's writes to a guarded key (each a fenced script) against
#            plain writes to an unguarded key, both through the proxy;
#   script-acquire  a library's own obtain and release scripts (redislock's)
#            through the proxy, against the same scripts sent directly (goal
#            >= 0.85): the obtain (without the library's leading line break)
#            under the monitor, the release (a known text) as lockproxy's
#            equivalent;
#   script-known    redislock v0.9.4's obtain and release byte for byte,
#            texts lockproxy knows and runs as its own equivalents
#            (rewrite/known.go), against the same scripts sent directly;
#   script-unknown  the same texts with a line added (known to no
#            catalogue: every call under the monitor), against the same
#            scripts sent directly;
#   script-fenced   a holder's scripted write to a guarded key through the
#            proxy (the wrapper checks its token) against the same script
#            sent directly (goal >= 0.85);
#   durable  acquire+release cycles on a lock whose rule has durability:
#            {replicas: 1, timeout: 1s}, against the release cycle, both
#            through the proxy: what waiting for a replica costs. A replica
#            of the bench's Valkey runs for this mode only (the other rows
#            are measured without one).
#   script-hop, script-fenced-hop  the same scripts on keys no rule matches,
#            through the proxy (forwarded, not wrapped) and directly: the
#            hop alone, which bounds the two rows above.
# BENCH_LOCK_MODES="release script-acquire" runs only those modes (with
# BENCH_FILTER naming one short scenario, e.g. 'SET P1 c1$', a run that
# measures lock traffic only).

PROXY_CONFIG_EXTRA+='
locks:
  - pattern: "*:lock"
    release: rewrite
  - pattern: "*:dlock"
    durability: {replicas: 1, timeout: 1s}
  - pattern: "{*}:mutex"
    fence:
      counter: "{base}:fence"
      guards: ["{base}:data"]
      check: highest
'

lock_measurements() {
  [[ -n ${PROXY_PID:-} ]] || return 0 # an external PROXY_ADDR may have no rules
  if [[ ! -x $tmp/lockbench ]]; then
    (cd "$root" && go build -o "$tmp/lockbench" ./cmd/lockbench) || die "cannot build cmd/lockbench"
  fi
  local mode d=${BENCH_LOCK_SECONDS:-3}s
  [[ ${BENCH_QUICK:-} == 1 ]] && d=1s
  for mode in ${BENCH_LOCK_MODES:-release scripted transit fenced durable script-acquire script-hop script-known script-unknown script-fenced script-fenced-hop}; do
    if [[ $mode == durable ]]; then start_bench_replica; fi
    log "[GOMAXPROCS=$gmp] lockbench -mode $mode -c 50 -d $d x $ROUNDS rounds"
    printf 'GOMAXPROCS=%s c50\t' "$gmp" >>"$tmp/extra.txt"
    "$tmp/lockbench" -proxy "$PROXY_HOST:$PROXY_PORT" -direct "$DIRECT_HOST:$DIRECT_PORT" \
      -c 50 -d "$d" -rounds "$ROUNDS" -mode "$mode" >>"$tmp/extra.txt" ||
      die "lockbench -mode $mode failed"
    if [[ $mode == durable ]]; then stop_bench_replica; fi
  done
}

# start_bench_replica: a replica of the bench's Valkey, for the durable
# mode only; stop_bench_replica stops it (the primary counts no replica
# after, as in every other row).
start_bench_replica() {
  local port pid _
  port=$(free_port)
  mkdir -p "$tmp/replica"
  valkey-server --bind 127.0.0.1 --port "$port" --save "" --appendonly no --dir "$tmp/replica" \
    --repl-diskless-sync-delay 0 --replicaof "$DIRECT_HOST" "$DIRECT_PORT" --daemonize no >"$tmp/replica.log" 2>&1 &
  pid=$!
  started "$pid" "$port" || die "the replica for lockbench -mode durable did not start"
  BENCH_REPLICA_PID=$pid
  for _ in $(seq 100); do
    valkey-cli -h "$DIRECT_HOST" -p "$DIRECT_PORT" INFO replication | grep -q 'state=online' && return 0
    sleep 0.1
  done
  die "the replica for lockbench -mode durable did not come online"
}

stop_bench_replica() {
  [[ -n ${BENCH_REPLICA_PID:-} ]] && stop_started "$BENCH_REPLICA_PID"
  BENCH_REPLICA_PID=""
}
BENCH_AFTER_HOOKS+=(lock_measurements)
