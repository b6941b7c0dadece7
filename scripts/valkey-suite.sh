#!/usr/bin/env bash
# Valkey's own TCL test suite (8.0.1), first against a fresh valkey-server
# directly, then against another fresh one behind lockproxy with a lock rule
# active, each in one pass; prints the score and fails when a test that
# passed directly did not pass through lockproxy, unless it is listed with
# its reason in scripts/valkey-suite-exceptions.tsv. docs/valkey-suite.md
# says more.
#
# Environment (all optional):
#   VALKEY_SUITE_DIR   the shared suite and its runner (default ../shared/valkey-suite)
#   VALKEY_SUITE_OUT   where the runs' output goes (default suite-results/)
#   VALKEY_SUITE_DIRECT an earlier direct run's output folder: reuse it as the
#                      baseline instead of running the suite directly again
#   VALKEY_SUITE_UNITS only these units (space-separated; for study: the
#                      comparison then covers only them)
#   LOCKPROXY          the lockproxy binary (default: built into bin/)
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
suite=${VALKEY_SUITE_DIR:-$root/../shared/valkey-suite}
out=${VALKEY_SUITE_OUT:-$root/suite-results}
exceptions=$root/scripts/valkey-suite-exceptions.tsv
[ -x "$suite/run.sh" ] || { echo "valkey-suite: no runner at $suite/run.sh (set VALKEY_SUITE_DIR)" >&2; exit 2; }
command -v valkey-server >/dev/null || { echo "valkey-suite: no valkey-server (make deps)" >&2; exit 2; }
command -v tclsh >/dev/null || { echo "valkey-suite: no tclsh (scripts/deps.sh suite)" >&2; exit 2; }
mkdir -p "$out"
out=$(cd "$out" && pwd)

if [ -z "${LOCKPROXY:-}" ]; then
  go build -o bin/lockproxy ./cmd/lockproxy || exit 2
  LOCKPROXY=$root/bin/lockproxy
fi

# A free TCP port on 127.0.0.1 from 17150 up (the suite's own control
# socket takes one of 17110..17141).
next=17150
freeport() {
  while (exec 3<>"/dev/tcp/127.0.0.1/$next") 2>/dev/null; do next=$((next + 1)); done
  port=$next
  next=$((next + 1))
}

pids=()
cleanup() {
  # SIGKILL: a server wedged by a test ignores SIGTERM (the suite's README).
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
  wait 2>/dev/null
  pids=()
}
trap cleanup EXIT

# valkey_start NAME: a fresh valkey-server with upstream's external-CI flags;
# sets vport.
valkey_start() {
  freeport
  vport=$port
  mkdir -p "$out/$1-server"
  valkey-server --port "$vport" --bind 127.0.0.1 --save '' --appendonly no \
    --dir "$out/$1-server" --enable-protected-configs yes --enable-debug-command yes \
    --enable-module-command yes >"$out/$1-server/valkey.log" 2>&1 &
  pids+=($!)
  wait_port "$vport" || { echo "valkey-suite: valkey-server did not start (see $out/$1-server/valkey.log)" >&2; exit 2; }
}

wait_port() {
  for _ in $(seq 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}

if [ -n "${VALKEY_SUITE_DIRECT:-}" ]; then
  # Absolute: the runner works from a copy of the suite elsewhere.
  direct=$(cd "$VALKEY_SUITE_DIRECT" && pwd) || exit 2
  echo "valkey-suite: baseline from $direct"
else
  direct=$out/direct
  rm -rf "$direct"
  valkey_start direct
  echo "valkey-suite: directly against valkey-server on port $vport"
  "$suite/run.sh" 127.0.0.1 "$vport" "$direct" | tee "$out/direct.txt"
  cleanup
fi
[ -s "$direct/passed.txt" ] || { echo "valkey-suite: the direct run passed nothing ($direct)" >&2; exit 2; }

# proxied_run DIR [UNITS]: a fresh valkey-server with lockproxy in front
# (a lock rule active), the suite through lockproxy into DIR, compared with
# the direct run; UNITS, when given, limits it to those units.
proxied_run() {
  local dir=$1 name
  name=$(basename "$dir")
  rm -rf "$dir"
  valkey_start "$name"
  freeport
  pport=$port
  # admin_commands: forward: the suite reconfigures its server (CONFIG SET,
  # DEBUG, ACL SETUSER, ...) as its administrator (docs/valkey-suite.md).
  printf 'listen: 127.0.0.1:%s\nadmin_commands: forward\nupstream:\n  addr: 127.0.0.1:%s\nlocks:\n  - pattern: "*:lock"\n    release: rewrite\n' \
    "$pport" "$vport" >"$out/$name.yaml"
  "$LOCKPROXY" -config "$out/$name.yaml" >"$out/$name.log" 2>&1 &
  pids+=($!)
  wait_port "$pport" || { echo "valkey-suite: lockproxy did not start (see $out/$name.log)" >&2; exit 2; }
  echo "valkey-suite: through lockproxy on port $pport, valkey-server on port $vport${2:+ (units: $2)}"
  VALKEY_SUITE_UNITS=${2:-${VALKEY_SUITE_UNITS:-}} VALKEY_SUITE_BASELINE=$direct \
    "$suite/run.sh" 127.0.0.1 "$pport" "$dir" | tee "$out/$name.txt"
  cleanup
}

proxied=$out/lockproxy
proxied_run "$proxied"

[ -f "$proxied/not-passed-vs-baseline.txt" ] || { echo "valkey-suite: the runner wrote no comparison with the direct run ($proxied/not-passed-vs-baseline.txt)" >&2; exit 2; }

# What passed directly, of the units this run covered, and did not pass
# through lockproxy; then which of those the exceptions file excuses.
units=$(cut -f1 "$proxied/units.tsv" | sort -u)
awk -F'\t' 'FILENAME == ARGV[1] { run[$1] = 1; next } ($1 in run)' <(printf '%s\n' "$units") \
  "$proxied/not-passed-vs-baseline.txt" | sort >"$out/not-passed.txt"
grep -v '^#' "$exceptions" | awk -F'\t' 'FILENAME == ARGV[1] { run[$1] = 1; next } NF >= 3 && ($1 in run) { print $1 "\t" $2 }' \
  <(printf '%s\n' "$units") - | sort >"$out/excused.txt"
# A test the suite runs in several variants (EVAL, EVALSHA, FCALL, each in
# RESP2 and RESP3) is listed once per variant that did not pass; one line of
# the exceptions file excuses them all.
awk -F'\t' 'FILENAME == ARGV[1] { ex[$1 FS $2] = 1; next } !(($1 FS $2) in ex)' "$out/excused.txt" "$out/not-passed.txt" >"$out/unexcused.txt"
comm -13 <(sort -u "$out/not-passed.txt") "$out/excused.txt" >"$out/excused-but-passed.txt"
base=$(awk -F'\t' 'FILENAME == ARGV[1] { run[$1] = 1; next } ($1 in run)' <(printf '%s\n' "$units") "$direct/passed.txt" | grep -c .)
miss=$(grep -c . "$out/not-passed.txt")
bad=$(grep -c . "$out/unexcused.txt")
echo "valkey-suite: directly $(tail -1 "$direct/summary.txt")"
echo "valkey-suite: through lockproxy $((base - miss)) of $base tests that passed directly passed ($((miss - bad)) excused in scripts/valkey-suite-exceptions.tsv, $bad not)"
if [ -s "$out/excused-but-passed.txt" ]; then
  echo "valkey-suite: excused but passed (the exception may be stale):"
  sed 's/^/  /' "$out/excused-but-passed.txt"
fi
if [ "$bad" -gt 0 ]; then
  echo "valkey-suite: passed directly, not through lockproxy, and not excused:"
  sed 's/^/  /' "$out/unexcused.txt"
  echo "  (the suite's messages: $proxied/failed-details.txt)"
fi
# A second look before failing: the units of those tests run once more,
# on a fresh server and lockproxy. A test that passes then is reported as
# flaky (the score above stays the one pass's); one that fails again fails
# the run. VALKEY_SUITE_RETRY=0 fails at once.
if [ "$bad" -gt 0 ] && [ "${VALKEY_SUITE_RETRY:-1}" != 0 ]; then
  proxied_run "$out/lockproxy-again" "$(cut -f1 "$out/unexcused.txt" | sort -u | tr '\n' ' ')"
  again=$out/lockproxy-again/not-passed-vs-baseline.txt
  [ -f "$again" ] || { echo "valkey-suite: the second look wrote no comparison ($again)" >&2; exit 2; }
  awk -F'\t' 'FILENAME == ARGV[1] { miss[$1 FS $2] = 1; next } (($1 FS $2) in miss)' "$again" "$out/unexcused.txt" >"$out/unexcused-again.txt"
  awk -F'\t' 'FILENAME == ARGV[1] { miss[$1 FS $2] = 1; next } !(($1 FS $2) in miss)' "$again" "$out/unexcused.txt" >"$out/flaky.txt"
  if [ -s "$out/flaky.txt" ]; then
    echo "valkey-suite: FLAKY: not passed in the one pass, passed when their units ran again:"
    sed 's/^/  /' "$out/flaky.txt"
  fi
  bad=$(grep -c . "$out/unexcused-again.txt")
  cp "$out/unexcused-again.txt" "$out/unexcused.txt"
fi
if [ "$bad" -gt 0 ]; then
  echo "valkey-suite: FAIL: passed directly, not through lockproxy (in the pass and again), and not excused:"
  sed 's/^/  /' "$out/unexcused.txt"
  exit 1
fi
