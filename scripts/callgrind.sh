#!/usr/bin/env bash
# scripts/callgrind.sh — what one operation costs Valkey, in instructions
# (docs/benchmarks.md, "scripts/callgrind.sh"): valkey-server runs under valgrind's
# callgrind, lockproxy in front of it (make bench's lock rules), and cmd/lockbench runs
# MODE's operation through lockproxy (side a) or directly (side b, same
# scripts sent bare): WARM operations, then the counters are zeroed, N
# operations, a dump. The figure is valkey-server's processCommand,
# inclusive, divided by N. Instructions do not depend on what else the
# machine is doing, so the figure is repeatable on a loaded machine.
#
#   scripts/callgrind.sh [MODE [SIDE]]   MODE: a lockbench -mode (default
#                                        script-acquire); SIDE: a or b
# Environment: N=3000 WARM=100, LOCKPROXY_BIN=path (another build, to
# compare), KEEP=1 (keep the dumps). Needs valgrind (callgrind_control and
# callgrind_annotate come with it).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
mode=${1:-script-acquire}
side=${2:-a}
N=${N:-3000}
WARM=${WARM:-100}
command -v valgrind >/dev/null || { echo "callgrind.sh: needs valgrind (apt-get install valgrind)" >&2; exit 1; }
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  [ -n "${KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
vport=$(free_port)
pport=$(free_port)
if [ -n "${LOCKPROXY_BIN:-}" ]; then cp "$LOCKPROXY_BIN" "$work/lockproxy"; else go build -o "$work/lockproxy" ./cmd/lockproxy; fi
go build -o "$work/lockbench" ./cmd/lockbench
valgrind --tool=callgrind --callgrind-out-file="$work/cg.%p" \
  valkey-server --port "$vport" --save '' --appendonly no >"$work/valkey.log" 2>&1 &
vpid=$!
pids+=("$vpid")
for _ in $(seq 1 600); do
  valkey-cli -p "$vport" PING >/dev/null 2>&1 && break
  sleep 0.1
done
cat >"$work/lockproxy.yaml" <<EOF
listen: 127.0.0.1:$pport
upstream:
  addr: 127.0.0.1:$vport
locks:
  - pattern: "*:lock"
    release: rewrite
  - pattern: "{*}:mutex"
    fence:
      counter: "{base}:fence"
      guards: ["{base}:data"]
      check: highest
EOF
"$work/lockproxy" -config "$work/lockproxy.yaml" >"$work/lockproxy.log" 2>&1 &
pids+=("$!")
for _ in $(seq 1 600); do
  valkey-cli -p "$pport" PING >/dev/null 2>&1 && break
  sleep 0.1
done
bench() { "$work/lockbench" -proxy "127.0.0.1:$pport" -direct "127.0.0.1:$vport" -mode "$mode" -only "$side" -c 1 -n "$1"; }
bench "$WARM"
callgrind_control -z "$vpid" >/dev/null 2>&1
bench "$N"
callgrind_control -d "$vpid" >/dev/null 2>&1
# (|| true: head and awk stop reading early, and pipefail would count the
# writer's SIGPIPE as a failure.)
dump=$(ls -t "$work"/cg.*.1 | head -n 1 || true)
total=$( (callgrind_annotate --inclusive=yes "$dump" 2>/dev/null || true) | awk '/processCommand/ { gsub(",", "", $1); print $1; exit }' || true)
[ -n "$total" ] || { echo "callgrind.sh: no processCommand in the dump" >&2; exit 1; }
awk -v t="$total" -v n="$N" -v m="$mode" -v s="$side" 'BEGIN { printf "%s side %s: %.1fk instructions per operation (processCommand inclusive %d / %d)\n", m, s, t / n / 1000, t, n }'
