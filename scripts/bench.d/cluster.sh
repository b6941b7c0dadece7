# shellcheck shell=bash
# shellcheck disable=SC2154,SC2034 # tmp, gmp, N, DIRECT_ARGS ... are bench.sh's, which sources this file
# Valkey Cluster rows for `make bench` (sourced by scripts/bench.sh).
#
# A local cluster of three primaries without replicas (small enough for two
# cores: no persistence, one I/O thread each) is started once; per
# GOMAXPROCS a second lockproxy runs in front of it with
# upstream.cluster.seeds (and the same lock rules as the other rows). Each
# scenario then alternates, as the other rows do, valkey-benchmark --cluster
# straight to the nodes ("direct": it reads the slot map and talks to each
# primary itself) with plain valkey-benchmark through lockproxy, which routes
# every key to its slot's primary. Keys are spread over the slots with -r, so
# both sides reach all three primaries.
#
#   BENCH_CLUSTER=0   skip these rows (and the cluster)
# BENCH_FILTER selects them as any row: their names start with "cluster ".

CLUSTER_PORTS=()

cluster_scenarios() {
  [[ ${BENCH_CLUSTER:-1} != 0 ]] || return 0
  local p t
  for p in 1 16; do
    for t in SET GET; do
      scenario --cluster "cluster $t P$p c50" -t "${t,,}" -n "$N" -c 50 -P "$p" -r 100000
    done
  done
}
BENCH_SCENARIO_HOOKS+=(cluster_scenarios)

# start_cluster: three valkey-server --cluster-enabled on free ports, joined
# by valkey-cli --cluster create; waits for cluster_state:ok on every node.
start_cluster() {
  local i port pid _ ok
  for i in 0 1 2; do
    for _ in 1 2 3; do
      port=$(free_port)
      mkdir -p "$tmp/cluster$i"
      valkey-server --bind 127.0.0.1 --port "$port" --save "" --appendonly no \
        --cluster-enabled yes --cluster-config-file "$tmp/cluster$i/nodes.conf" \
        --cluster-node-timeout 5000 --dir "$tmp/cluster$i" --daemonize no \
        >"$tmp/valkey-cluster$i.log" 2>&1 &
      pid=$!
      if started "$pid" "$port"; then
        CLUSTER_PORTS+=("$port")
        break
      fi
    done
  done
  ((${#CLUSTER_PORTS[@]} == 3)) || die "the cluster's valkey-servers did not start"
  valkey-cli --cluster create "${CLUSTER_PORTS[@]/#/127.0.0.1:}" --cluster-replicas 0 --cluster-yes \
    >"$tmp/cluster-create.log" 2>&1 || die "valkey-cli --cluster create failed: $(tail -n 3 "$tmp/cluster-create.log")"
  for _ in $(seq 100); do
    ok=0
    for port in "${CLUSTER_PORTS[@]}"; do
      if valkey-cli -p "$port" CLUSTER INFO 2>/dev/null | grep -q '^cluster_state:ok'; then ok=$((ok + 1)); fi
    done
    ((ok == 3)) && return 0
    sleep 0.1
  done
  die "the cluster did not reach cluster_state:ok"
}

# cluster_rows: measures the --cluster scenarios, with the cluster's first
# node (and --cluster) as the direct side and a lockproxy with seeds as the
# proxy; no twemproxy side (it has no cluster mode).
cluster_rows() {
  local i any=0 seeds
  for i in "${!SCEN_NAME[@]}"; do [[ ${SCEN_MODE[i]} != cluster ]] || any=1; done
  ((any)) || return 0
  if ((external_proxy)); then
    log "cluster rows skipped: PROXY_ADDR is not in front of a cluster of ours"
    return 0
  fi
  if ((${#CLUSTER_PORTS[@]} == 0)); then
    start_cluster
    log "cluster: three primaries at 127.0.0.1 ports ${CLUSTER_PORTS[*]}"
  fi
  local saved=("$DIRECT_HOST" "$DIRECT_PORT" "$DIRECT_PID" "$PROXY_HOST" "$PROXY_PORT" "$PROXY_PID" "$REF_PORT")
  DIRECT_HOST=127.0.0.1 DIRECT_PORT=${CLUSTER_PORTS[0]} DIRECT_PID="" REF_PORT=""
  seeds=$(printf '127.0.0.1:%s, ' "${CLUSTER_PORTS[@]}")
  PROXY_SEEDS=${seeds%, } start_proxy "$gmp" -cluster
  log "proxy: lockproxy in front of the cluster at $PROXY_HOST:$PROXY_PORT, pid $PROXY_PID, GOMAXPROCS=$gmp"
  DIRECT_ARGS=(--cluster)
  run_bench "$DIRECT_HOST" "$DIRECT_PORT" "" "$N_WARM" --cluster -t set -n "$N_WARM" -c 50 -r 100000
  run_bench "$PROXY_HOST" "$PROXY_PORT" "" "$N_WARM" -t set -n "$N_WARM" -c 50 -r 100000
  for i in "${!SCEN_NAME[@]}"; do [[ ${SCEN_MODE[i]} != cluster ]] || measure "$i"; done
  DIRECT_ARGS=()
  stop_started "$PROXY_PID"
  DIRECT_HOST=${saved[0]} DIRECT_PORT=${saved[1]} DIRECT_PID=${saved[2]}
  PROXY_HOST=${saved[3]} PROXY_PORT=${saved[4]} PROXY_PID=${saved[5]} REF_PORT=${saved[6]}
}
BENCH_AFTER_HOOKS+=(cluster_rows)
