#!/usr/bin/env bash
# scripts/bench.sh — what `make bench` calls: how much throughput, latency and
# CPU does lockproxy cost compared with talking to Valkey directly?
#
# One run does everything: starts a private valkey-server on a free loopback
# port (no persistence), builds bin/lockproxy and starts it in front of that
# server once per GOMAXPROCS value, then runs each scenario with
# valkey-benchmark --csv against Valkey ("direct") and through lockproxy
# ("proxy"). Direct and proxy runs of a scenario alternate, as pairs repeated
# BENCH_ROUNDS times (the order flips every round), so machine noise and
# warm-up hit both sides alike; the table shows per-side medians.
# lockproxy's CPU per request comes from utime+stime in /proc/PID/stat, read
# before and after each proxied run.
# Everything started here is stopped on exit, failure or Ctrl-C included, and
# all traffic stays on loopback.
#
# Environment:
#   BENCH_N=200000       requests per throughput run
#   BENCH_N_LAT=50000    requests for the c1 latency probe
#   BENCH_ROUNDS=3       direct/proxy pairs per scenario (median taken)
#   BENCH_QUICK=1        smoke run: tiny N, 1 round (explicit knobs still win)
#   BENCH_GOMAXPROCS="1 2"  GOMAXPROCS values lockproxy is run with
#   BENCH_FILTER=REGEX   only scenarios whose name matches (grep -E)
#   BENCH_CLUSTER=0      skip the Valkey Cluster rows (bench.d/cluster.sh)
#   BENCH_BUSY_POLL=50us then runs the scenarios matching
#   BENCH_BUSY_POLL_FILTER='c1|SET P1 c50' again through a proxy with that
#                        busy_poll ("" skips it; not with PROXY_ADDR)
#   BENCH_OUT=bench-results.tsv  machine-readable results
#   BENCH_RUN_TIMEOUT=600 seconds before one valkey-benchmark run is killed
#   PROXY_ADDR=host:port bench an already-running target instead of building
#                        and starting lockproxy (PROXY_PID=pid to get its CPU)
#   DIRECT_ADDR=host:port use this server as "direct" (e.g. PROXY_ADDR's
#                        upstream) instead of a private one (DIRECT_PID likewise)
#   LOCKPROXY_BIN=path   use this binary instead of building bin/lockproxy
#   BENCH_REFERENCE=auto twemproxy (Debian's nutcracker) in front of the same
#                        Valkey as a third side of every pair, when nutcracker
#                        is installed ("twemproxy" requires it, "none" skips):
#                        the proxy users compare with, in the same minutes
#
# Adding a scenario is one `scenario` line in default_scenarios below, or, to
# keep a feature's scenarios in its own file, a scripts/bench.d/NAME.sh that
# defines a function of such lines and appends its name to
# BENCH_SCENARIO_HOOKS. Hooks run once Valkey is up, so they can prepare data,
# e.g.
#   release_scenarios() {
#     local sha; sha=$(direct_cli SCRIPT LOAD "$RELEASE_LUA")
#     scenario "RELEASE c50" -n "$N" -c 50 -r 100000 EVALSHA "$sha" 1 lock:__rand_int__ tok
#   }
#   BENCH_SCENARIO_HOOKS+=(release_scenarios)
# A hook that needs lock rules appends YAML to PROXY_CONFIG_EXTRA.
# Note valkey-benchmark takes a custom command as trailing words: no `--`.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# Relative paths in the environment mean the caller's directory, not root.
abspath() { if [[ $1 == /* ]]; then echo "$1"; else echo "$PWD/$1"; fi; }
[[ -z ${BENCH_OUT:-} ]] || BENCH_OUT=$(abspath "$BENCH_OUT")
[[ -z ${LOCKPROXY_BIN:-} ]] || LOCKPROXY_BIN=$(abspath "$LOCKPROXY_BIN")
cd "$root"

# ---------------------------------------------------------------- settings
if [[ ${BENCH_QUICK:-0} == 1 ]]; then
  N=${BENCH_N:-2000}
  N_LAT=${BENCH_N_LAT:-500}
  ROUNDS=${BENCH_ROUNDS:-1}
  N_WARM=500
else
  N=${BENCH_N:-200000}
  N_LAT=${BENCH_N_LAT:-50000}
  ROUNDS=${BENCH_ROUNDS:-3}
  N_WARM=20000
fi
OUT=${BENCH_OUT:-bench-results.tsv}
GOMAXPROCS_LIST=${BENCH_GOMAXPROCS:-1 2}
FILTER=${BENCH_FILTER:-}
BUSY_POLL=${BENCH_BUSY_POLL-50us}
BUSY_POLL_FILTER=${BENCH_BUSY_POLL_FILTER:-c1|SET P1 c50}
RUN_TIMEOUT=${BENCH_RUN_TIMEOUT:-600}
REFERENCE=${BENCH_REFERENCE:-auto}
PROXY_ADDR=${PROXY_ADDR:-}
PROXY_PID=${PROXY_PID:-}
DIRECT_ADDR=${DIRECT_ADDR:-}
DIRECT_PID=${DIRECT_PID:-}
CLK_TCK=$(getconf CLK_TCK)

case $REFERENCE in
  auto | twemproxy | none) ;;
  *) echo "bench.sh: BENCH_REFERENCE must be auto, twemproxy or none, got '$REFERENCE'" >&2; exit 2 ;;
esac
for v in N N_LAT ROUNDS RUN_TIMEOUT; do
  [[ ${!v} =~ ^[1-9][0-9]*$ ]] || { echo "bench.sh: $v must be a positive integer, got '${!v}'" >&2; exit 2; }
done

log() { printf 'bench.sh: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

# ---------------------------------------------------------------- scenarios
# scenario [--proxy-only|--cluster] NAME VALKEY-BENCHMARK-ARGS...
# One valkey-benchmark test per scenario (one -t test, or one custom command),
# so the CPU measured over a run belongs to exactly that test. -n defaults to
# $N. --proxy-only is for commands only lockproxy understands (no direct side);
# --cluster rows are measured by bench.d/cluster.sh against its own cluster.
SCEN_NAME=() SCEN_ARGS=() SCEN_MODE=() SCEN_N=() SCEN_C=() SCEN_P=()
scenario() {
  local mode=pair name n="" c=50 p=1 i
  case $1 in
    --proxy-only) mode=proxy; shift ;;
    --cluster) mode=cluster; shift ;;
  esac
  name=$1; shift
  [[ $name != *$'\t'* ]] || die "scenario name must not contain a tab: $name"
  if [[ -n $FILTER ]] && ! grep -qE -- "$FILTER" <<<"$name"; then return 0; fi
  local -a args=("$@")
  for ((i = 0; i < ${#args[@]} - 1; i++)); do
    case ${args[i]} in
      -n) n=${args[i + 1]} ;;
      -c) c=${args[i + 1]} ;;
      -P) p=${args[i + 1]} ;;
    esac
  done
  if [[ -z $n ]]; then n=$N; args=(-n "$N" "${args[@]}"); fi
  SCEN_NAME+=("$name")
  SCEN_ARGS+=("$(printf '%q ' "${args[@]}")") # re-split with eval at run time
  SCEN_MODE+=("$mode")
  SCEN_N+=("$n") SCEN_C+=("$c") SCEN_P+=("$p")
}

default_scenarios() {
  local p t
  for p in 1 16; do
    for t in SET GET INCR; do
      scenario "$t P$p c50" -t "${t,,}" -n "$N" -c 50 -P "$p"
    done
  done
  # Latency probe: one client, no pipelining, so p50 is one round trip.
  scenario "SET P1 c1" -t set -n "$N_LAT" -c 1 -P 1
}

BENCH_SCENARIO_HOOKS=(default_scenarios)
# Arguments only the direct side's valkey-benchmark gets (--cluster, for the
# cluster rows of bench.d/cluster.sh).
DIRECT_ARGS=()
# Functions run after the scenarios of each GOMAXPROCS, with the proxy still
# up (PROXY_HOST/PORT/PID, DIRECT_HOST/PORT set, $gmp the GOMAXPROCS): for
# measurements valkey-benchmark cannot make. They append lines to
# $tmp/extra.txt, printed after the table.
BENCH_AFTER_HOOKS=()
# Top-level YAML that hooks may append to lockproxy's config (e.g. a `locks:`
# section their scenarios need); unused with PROXY_ADDR.
PROXY_CONFIG_EXTRA=""
if [[ -d $root/scripts/bench.d ]]; then
  for f in "$root"/scripts/bench.d/*.sh; do
    [[ -e $f ]] || continue
    # shellcheck source=/dev/null
    source "$f"
  done
fi

# ---------------------------------------------------------------- processes
tmp=$(mktemp -d "${TMPDIR:-/tmp}/lockproxy-bench.XXXXXX")
started_pids=()   # everything we started, stopped by cleanup
bench_pid=""      # the valkey-benchmark run in flight, if any

stop_pid() {
  local pid=$1 _
  kill -TERM "$pid" 2>/dev/null || return 0
  for _ in $(seq 30); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}

# stop_started PID: stop one of our processes and forget it, so cleanup never
# signals a pid number the system may have handed to someone else since.
stop_started() {
  local p
  local -a keep=()
  stop_pid "$1"
  for p in "${started_pids[@]}"; do [[ $p == "$1" ]] || keep+=("$p"); done
  started_pids=("${keep[@]}")
}

cleanup() {
  local rc=$? pid f
  trap - EXIT INT TERM
  [[ -n $bench_pid ]] && stop_pid "$bench_pid"
  for pid in "${started_pids[@]}"; do stop_pid "$pid"; done
  if ((rc != 0 && rc != 130 && rc != 143)); then
    # A real failure, not Ctrl-C/TERM. lockproxy is what is under test:
    # show how its log ends, and keep all logs for a closer look.
    for f in "$tmp"/lockproxy*.log; do
      [[ -s $f ]] || continue
      log "--- last lines of $(basename "$f")"
      tail -n 20 "$f" >&2
    done
    if compgen -G "$tmp/*.log" >/dev/null; then
      rm -rf "$tmp/valkey" "$tmp"/*.csv "$tmp"/*.runs
      log "failed (exit $rc); logs kept in $tmp"
      exit "$rc"
    fi
  fi
  rm -rf "$tmp"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# split_addr ADDR: prints "host port"; accepts host:port and [v6]:port.
split_addr() {
  local host=${1%:*} port=${1##*:}
  host=${host#[}
  host=${host%]}
  printf '%s %s\n' "${host:-127.0.0.1}" "$port"
}

require_loopback() {
  [[ $1 == 127.* || $1 == localhost || $1 == ::1 ]] ||
    die "$2 must be a loopback address (127.0.0.0/8, localhost, ::1), got $1"
}

is_listening() {
  # shellcheck disable=SC2016 # $1/$2 are expanded by the inner bash
  timeout 2 bash -c 'exec 3<>"/dev/tcp/$1/$2"' _ "$1" "$2" 2>/dev/null
}

# free_port: a loopback port nobody listens on right now, below the ephemeral
# range so outgoing connections do not grab it meanwhile. Callers retry if
# they lose the race anyway.
free_port() {
  local p _
  for _ in $(seq 100); do
    p=$((20000 + RANDOM % 10000))
    is_listening 127.0.0.1 "$p" || { echo "$p"; return 0; }
  done
  die "no free port found"
}

# wait_pong HOST PORT PID: until PING answers PONG; fails if PID exits or
# 10 s pass.
wait_pong() {
  local _
  for _ in $(seq 100); do
    [[ $(valkey-cli -h "$1" -p "$2" PING 2>/dev/null) == PONG ]] && return 0
    kill -0 "$3" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}

# started PID PORT: PID, just started on loopback PORT, is one of ours
# (cleanup stops it); true once it answers PING there, else it is stopped.
started() {
  started_pids+=("$1")
  wait_pong 127.0.0.1 "$2" "$1" && return 0
  stop_started "$1"
  return 1
}

# start_valkey: sets DIRECT_HOST DIRECT_PORT DIRECT_PID.
start_valkey() {
  local port pid _
  for _ in 1 2 3; do
    port=$(free_port)
    mkdir -p "$tmp/valkey"
    valkey-server --bind 127.0.0.1 --port "$port" --save "" --appendonly no \
      --dir "$tmp/valkey" --daemonize no >"$tmp/valkey.log" 2>&1 &
    pid=$!
    if started "$pid" "$port"; then
      DIRECT_HOST=127.0.0.1 DIRECT_PORT=$port DIRECT_PID=$pid
      return 0
    fi
  done
  die "valkey-server did not start"
}

# start_proxy GOMAXPROCS [LOG-TAG]: sets PROXY_HOST PROXY_PORT PROXY_PID.
start_proxy() {
  local gmp=$1 tag=${2:-} port pid _
  for _ in 1 2 3; do
    port=$(free_port)
    # PROXY_SEEDS (host:port, ...): in front of a cluster instead.
    local up="  addr: $DIRECT_HOST:$DIRECT_PORT"
    [[ -z ${PROXY_SEEDS:-} ]] || up=$(printf '  cluster:\n    seeds: [%s]' "$PROXY_SEEDS")
    printf 'listen: 127.0.0.1:%s\nupstream:\n%s\n%s\n' \
      "$port" "$up" "$PROXY_CONFIG_EXTRA" >"$tmp/lockproxy.yaml"
    # Started directly (no subshell), so $! is lockproxy's own pid: the one
    # whose /proc/PID/stat we read.
    GOMAXPROCS=$gmp "$LOCKPROXY_BIN" --config "$tmp/lockproxy.yaml" >"$tmp/lockproxy-gmp$gmp$tag.log" 2>&1 &
    pid=$!
    if started "$pid" "$port"; then
      PROXY_HOST=127.0.0.1 PROXY_PORT=$port PROXY_PID=$pid
      return 0
    fi
  done
  die "lockproxy did not answer PING on 127.0.0.1:$port (GOMAXPROCS=$gmp)"
}

# start_twemproxy: twemproxy in front of the direct Valkey, one server
# connection as its default; sets REF_HOST REF_PORT REF_PID. Its stats port
# is a free one too, on loopback.
start_twemproxy() {
  local port stats pid _
  for _ in 1 2 3; do
    port=$(free_port) stats=$(free_port)
    cat >"$tmp/twemproxy.yml" <<YML
bench:
  listen: 127.0.0.1:$port
  redis: true
  hash: fnv1a_64
  distribution: ketama
  auto_eject_hosts: false
  servers:
    - $DIRECT_HOST:$DIRECT_PORT:1
YML
    "$NUTCRACKER" -c "$tmp/twemproxy.yml" -s "$stats" -a 127.0.0.1 -o "$tmp/twemproxy.log" &
    pid=$!
    if started "$pid" "$port"; then
      REF_HOST=127.0.0.1 REF_PORT=$port REF_PID=$pid
      return 0
    fi
  done
  die "twemproxy did not answer PING on 127.0.0.1:$port (log: $tmp/twemproxy.log)"
}

direct_cli() { valkey-cli -h "$DIRECT_HOST" -p "$DIRECT_PORT" "$@"; }

# cpu_ticks PID: utime+stime of the whole process (all threads), in clock
# ticks. Fields 14 and 15 of /proc/PID/stat, counted after the ")" that ends
# the command name, which may itself contain spaces.
cpu_ticks() {
  local stat
  [[ -n $1 ]] || { echo ""; return 0; }
  [[ -r /proc/$1/stat ]] || die "process $1 exited during the benchmark (lockproxy crashed?)"
  stat=$(<"/proc/$1/stat")
  stat=${stat##*) }
  local -a f
  read -ra f <<<"$stat"
  echo $((f[11] + f[12]))
}

# run_bench HOST PORT PID N ARGS...: one valkey-benchmark run. Writes
# "rps avg_us p50_us p99_us cpu_us_per_req" to $tmp/last (cpu "-" without a
# pid). Called directly, never in $(...), so bench_pid is visible to the trap.
run_bench() {
  local host=$1 port=$2 pid=$3 n=$4 rc=0 before after
  shift 4
  before=$(cpu_ticks "$pid")
  # In the background plus `wait`, so a Ctrl-C reaches our trap at once
  # instead of after the run (timeout puts the run in its own process group,
  # out of reach of the terminal's SIGINT; cleanup stops it).
  timeout "$RUN_TIMEOUT" valkey-benchmark -h "$host" -p "$port" --csv "$@" \
    >"$tmp/run.csv" 2>"$tmp/run.err" &
  bench_pid=$!
  wait "$bench_pid" || rc=$?
  bench_pid=""
  after=$(cpu_ticks "$pid")
  if ((rc != 0)); then
    log "valkey-benchmark -h $host -p $port $* failed (exit $rc$( ((rc == 124)) && echo ", timed out after ${RUN_TIMEOUT}s")):"
    grep -v '^WARNING: Could not fetch server CONFIG' "$tmp/run.err" | tail -n 5 >&2 || true
    return 1
  fi
  # CSV: "test","rps","avg","min","p50","p95","p99","max" (latencies in ms).
  # Fields are counted from the right, as a custom command's name may
  # contain commas.
  awk -F, -v before="$before" -v after="$after" -v tck="$CLK_TCK" -v n="$n" '
    { gsub(/"/, "") }
    NF >= 8 && $(NF-6) ~ /^[0-9.]+$/ && $NF ~ /^[0-9.]+$/ {
      rows++
      cpu = (before == "" || after == "") ? "-" : sprintf("%.2f", (after - before) * 1e6 / tck / n)
      line = sprintf("%.0f %.0f %.0f %.0f %s", $(NF-6), $(NF-5) * 1000, $(NF-3) * 1000, $(NF-1) * 1000, cpu)
    }
    END {
      if (rows != 1) { print "bench.sh: expected one CSV result row, got " rows+0 " (one test per scenario)" > "/dev/stderr"; exit 1 }
      print line
    }' "$tmp/run.csv" >"$tmp/last"
}

# median: of the numbers on stdin ("-" if none).
median() {
  sort -g | awk '{ v[NR] = $1 } END {
    if (NR == 0) { print "-"; exit }
    m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
    print m }'
}

# col SIDE K: median of field K over this scenario's runs on SIDE.
col() { awk -v c="$2" '$c != "-" { print $c }' "$tmp/$1.runs" | median; }

# ---------------------------------------------------------------- setup
command -v valkey-benchmark >/dev/null || die "valkey-benchmark not installed (apt-get install valkey-tools)"

# Check the target and build before starting anything: a typo or a compile
# error then fails fast with nothing to clean up.
external_proxy=0
if [[ -n $PROXY_ADDR ]]; then
  external_proxy=1
  read -r PROXY_HOST PROXY_PORT <<<"$(split_addr "$PROXY_ADDR")"
  require_loopback "$PROXY_HOST" PROXY_ADDR
  [[ $(valkey-cli -h "$PROXY_HOST" -p "$PROXY_PORT" PING 2>/dev/null) == PONG ]] ||
    die "PROXY_ADDR $PROXY_ADDR does not answer PING"
  [[ -z $PROXY_PID || -r /proc/$PROXY_PID/stat ]] || die "PROXY_PID $PROXY_PID: no such process"
  GOMAXPROCS_LIST="-" # not ours to set
  log "proxy: external target at $PROXY_ADDR${PROXY_PID:+ (pid $PROXY_PID)}"
elif [[ -n ${LOCKPROXY_BIN:-} ]]; then
  [[ -x $LOCKPROXY_BIN ]] || die "LOCKPROXY_BIN $LOCKPROXY_BIN is not executable"
else
  log "building bin/lockproxy"
  go build -o bin/lockproxy ./cmd/lockproxy
  LOCKPROXY_BIN=$root/bin/lockproxy
fi

if [[ -n $DIRECT_ADDR ]]; then
  read -r DIRECT_HOST DIRECT_PORT <<<"$(split_addr "$DIRECT_ADDR")"
  require_loopback "$DIRECT_HOST" DIRECT_ADDR
  [[ $(direct_cli PING 2>/dev/null) == PONG ]] || die "DIRECT_ADDR $DIRECT_ADDR does not answer PING"
  [[ -z $DIRECT_PID || -r /proc/$DIRECT_PID/stat ]] || die "DIRECT_PID $DIRECT_PID: no such process"
else
  start_valkey
fi
log "direct: valkey at $DIRECT_HOST:$DIRECT_PORT${DIRECT_PID:+ (pid $DIRECT_PID)}"

REF_HOST="" REF_PORT="" REF_PID=""
# Debian installs it in /usr/sbin, which a user's PATH may not have.
NUTCRACKER=$(command -v nutcracker || { [[ -x /usr/sbin/nutcracker ]] && echo /usr/sbin/nutcracker; } || true)
if [[ $REFERENCE != none ]]; then
  if [[ -n $NUTCRACKER ]]; then
    start_twemproxy
    log "reference: twemproxy $("$NUTCRACKER" -V 2>&1 | head -n 1 | awk '{print $NF}') at $REF_HOST:$REF_PORT, pid $REF_PID"
  elif [[ $REFERENCE == twemproxy ]]; then
    die "BENCH_REFERENCE=twemproxy, but nutcracker is not installed (apt-get install nutcracker)"
  else
    log "reference: none (apt-get install nutcracker to compare with twemproxy in the same run)"
  fi
fi

for h in "${BENCH_SCENARIO_HOOKS[@]}"; do "$h"; done
((${#SCEN_NAME[@]} > 0)) || die "no scenario to run${FILTER:+ (BENCH_FILTER=$FILTER matched none)}"
log "${#SCEN_NAME[@]} scenarios x $ROUNDS rounds, N=$N, N_LAT=$N_LAT, GOMAXPROCS: $GOMAXPROCS_LIST"

# ---------------------------------------------------------------- measure
results=$tmp/results.tsv
columns=(scenario gomaxprocs clients pipeline requests rounds direct_rps proxy_rps ratio
  direct_avg_us direct_p50_us direct_p99_us proxy_avg_us proxy_p50_us proxy_p99_us
  proxy_cpu_us_per_req direct_cpu_us_per_req
  ref_rps ref_ratio ref_p50_us ref_p99_us ref_cpu_us_per_req)
(IFS=$'\t'; echo "${columns[*]}") >"$results"

# ratio_runs SIDE OUT: appends this round's SIDE/direct rps ratio to OUT.
# Taken within the round, so slow drift of the machine cancels out.
ratio_runs() {
  paste -d' ' <(tail -n 1 "$tmp/direct.runs") <(tail -n 1 "$tmp/$1.runs") |
    awk '{ printf "%.4f\n", ($1 > 0) ? $6 / $1 : 0 }' >>"$2"
}

# measure I [SUFFIX]: scenario I in alternating rounds of direct, proxy and,
# when it runs and SUFFIX is empty, the reference (ref), against the proxy at
# PROXY_*; its row appended to $results (named with SUFFIX).
measure() {
  local i=$1 name n r k side line rps p50 p99 cpu
  local -a args sides
  name=${SCEN_NAME[i]}${2:-} n=${SCEN_N[i]}
  eval "args=(${SCEN_ARGS[i]})"
  : >"$tmp/direct.runs"
  : >"$tmp/proxy.runs"
  : >"$tmp/ref.runs"
  : >"$tmp/ratio.runs"
  : >"$tmp/refratio.runs"
  for ((r = 1; r <= ROUNDS; r++)); do
    if [[ ${SCEN_MODE[i]} == proxy ]]; then
      sides=(proxy)
    else
      sides=(direct proxy)
      [[ -z $REF_PORT || -n ${2:-} ]] || sides+=(ref)
      # Rotate the order every round so no side always runs first.
      for ((k = 0; k < (r - 1) % ${#sides[@]}; k++)); do sides=("${sides[@]:1}" "${sides[0]}"); done
    fi
    for side in "${sides[@]}"; do
      case $side in
        direct) run_bench "$DIRECT_HOST" "$DIRECT_PORT" "$DIRECT_PID" "$n" "${DIRECT_ARGS[@]}" "${args[@]}" ;;
        proxy) run_bench "$PROXY_HOST" "$PROXY_PORT" "$PROXY_PID" "$n" "${args[@]}" ;;
        ref) run_bench "$REF_HOST" "$REF_PORT" "$REF_PID" "$n" "${args[@]}" ;;
      esac
      line=$(<"$tmp/last")
      echo "$line" >>"$tmp/$side.runs"
      read -r rps _ p50 p99 cpu <<<"$line"
      log "$(printf '[GOMAXPROCS=%s] %-16s round %d/%d %-6s %9s rps  p50 %5sµs  p99 %5sµs  cpu/req %sµs' \
        "$gmp" "$name" "$r" "$ROUNDS" "$side" "$rps" "$p50" "$p99" "$cpu")"
    done
    if [[ ${SCEN_MODE[i]} != proxy ]]; then
      ratio_runs proxy "$tmp/ratio.runs"
      [[ ! -s $tmp/ref.runs ]] || ratio_runs ref "$tmp/refratio.runs"
    fi
  done
  local -a ref=(- - - - -)
  if [[ -s $tmp/ref.runs ]]; then
    ref=("$(col ref 1)" "$(median <"$tmp/refratio.runs")" "$(col ref 3)" "$(col ref 4)" "$(col ref 5)")
  fi
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' \
    "$name" "$gmp" "${SCEN_C[i]}" "${SCEN_P[i]}" "$n" "$ROUNDS" \
    "$(col direct 1)" "$(col proxy 1)" "$(median <"$tmp/ratio.runs")" \
    "$(col direct 2)" "$(col direct 3)" "$(col direct 4)" \
    "$(col proxy 2)" "$(col proxy 3)" "$(col proxy 4)" \
    "$(col proxy 5)" "$(col direct 5)" "${ref[@]}" >>"$results"
}

for gmp in $GOMAXPROCS_LIST; do
  if ((external_proxy == 0)); then
    start_proxy "$gmp"
    log "proxy: lockproxy at $PROXY_HOST:$PROXY_PORT, pid $PROXY_PID, GOMAXPROCS=$gmp"
  fi
  # Warm-up, not measured: first connections, Go heap growth, CPU frequency.
  run_bench "$DIRECT_HOST" "$DIRECT_PORT" "" "$N_WARM" -t set -n "$N_WARM" -c 50
  run_bench "$PROXY_HOST" "$PROXY_PORT" "" "$N_WARM" -t set -n "$N_WARM" -c 50
  [[ -z $REF_PORT ]] || run_bench "$REF_HOST" "$REF_PORT" "" "$N_WARM" -t set -n "$N_WARM" -c 50

  for i in "${!SCEN_NAME[@]}"; do [[ ${SCEN_MODE[i]} == cluster ]] || measure "$i"; done

  for h in "${BENCH_AFTER_HOOKS[@]}"; do "$h"; done

  if ((external_proxy == 0)); then
    stop_started "$PROXY_PID"
    # The same proxy with busy_poll: what polling before sleeping buys a
    # lone client, and what it costs many.
    if [[ -n $BUSY_POLL ]]; then
      saved_extra=$PROXY_CONFIG_EXTRA
      PROXY_CONFIG_EXTRA+=$'\n'"busy_poll: $BUSY_POLL"
      start_proxy "$gmp" -busy-poll
      log "proxy: lockproxy with busy_poll $BUSY_POLL at $PROXY_HOST:$PROXY_PORT, pid $PROXY_PID, GOMAXPROCS=$gmp"
      run_bench "$PROXY_HOST" "$PROXY_PORT" "" "$N_WARM" -t set -n "$N_WARM" -c 50
      for i in "${!SCEN_NAME[@]}"; do
        if [[ ${SCEN_MODE[i]} != cluster ]] && grep -qE -- "$BUSY_POLL_FILTER" <<<"${SCEN_NAME[i]}"; then
          measure "$i" " busy_poll=$BUSY_POLL"
        fi
      done
      stop_started "$PROXY_PID"
      PROXY_CONFIG_EXTRA=$saved_extra
    fi
  fi
done

cp "$results" "$OUT"

# ---------------------------------------------------------------- report
# LC_ALL=C makes every awk count bytes, so the one extra byte of each "µ" can
# be padded for (w + 1) and the columns line up in a UTF-8 terminal.
echo
# With a reference, three more columns: twemproxy's rps, its own ratio to
# direct in the same rounds, and its p50/p99.
LC_ALL=C awk -F'\t' -v ref="${REF_PORT:+1}" '
  function us(v) { return (v == "-") ? "-" : sprintf("%.0f", v) }
  function r3(v) { return (v == "-") ? "-" : sprintf("%.3f", v) }
  function row(a, b, c, d, e, f, g, h, x, y, z) {
    printf "%-*s %10s %11s %11s %7s %*s %*s %*s", w, a, b, c, d, e,
      15 + (f ~ /\265/), f, 15 + (g ~ /\265/), g, 10 + (h ~ /\265/), h
    if (ref) printf " %11s %7s %*s", x, y, 15 + (z ~ /\265/), z
    printf "\n"
  }
  NR == FNR { if (length($1) > w) w = length($1); next } # pass 1: name width
  FNR == 1 {
    row("scenario", "GOMAXPROCS", "direct rps", "proxy rps", "ratio", "direct p50/p99", "proxy p50/p99", "proxy CPU",
      "twemproxy", "ratio", "twem p50/p99")
    row("", "", "", "", "px/dir", "(µs)", "(µs)", "µs/req", "rps", "tw/dir", "(µs)")
    next
  }
  {
    row($1, $2, us($7), us($8), r3($9),
      us($11) "/" us($12), us($14) "/" us($15), ($16 == "-") ? "-" : sprintf("%.2f", $16),
      us($18), r3($19), ($20 == "-") ? "-" : us($20) "/" us($21))
  }' "$results" "$results"

awk -F'\t' '
  NR == 1 { next }
  # Throughput ratios of the many-client runs; a single client is the
  # latency probe, reported by its p50 below.
  $3 > 1 && $9 != "-" && (min == "" || $9 + 0 < min + 0) { min = $9; at = $1 " @ GOMAXPROCS=" $2 }
  # The hop the proxy adds: its p50 minus direct p50 of the same pairs.
  $3 == 1 && $4 == 1 {
    c1 = c1 sep $14 "µs = direct " $11 "µs + " ($14 - $11) "µs added (" $1 " @ GOMAXPROCS=" $2 ")"; sep = ", "
  }
  # The reference in the same rounds: its smallest ratio, and lockproxy
  # against it where both ran.
  $3 > 1 && $19 != "-" {
    if (rmin == "" || $19 + 0 < rmin + 0) { rmin = $19; rat = $1 " @ GOMAXPROCS=" $2 }
    if ($19 > 0) { v = $9 / $19; if (vmin == "" || v < vmin) vmin = v; if (vmax == "" || v > vmax) vmax = v }
  }
  END {
    printf "\nsummary: smallest proxy/direct throughput ratio %s (%s); c1 p50 through the proxy: %s\n",
      (min == "") ? "-" : sprintf("%.3f", min), (at == "") ? "-" : at, (c1 == "") ? "-" : c1
    if (rmin != "")
      printf "reference: smallest twemproxy/direct ratio in the same rounds %.3f (%s); proxy ratio over twemproxy ratio, per row, %.2f-%.2f\n",
        rmin, rat, vmin, vmax
  }' "$results"
echo "ratio: median over $ROUNDS round(s) of proxy/direct rps within each round; other columns: per-side medians"
if [[ -s $tmp/extra.txt ]]; then
  echo
  cat "$tmp/extra.txt"
fi
echo "results: $OUT"
