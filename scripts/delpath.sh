#!/usr/bin/env bash
# scripts/delpath.sh — which files one DEL of a held lock key runs code in
# (docs/design.md, "The path of a command"): lockproxy built with coverage
# counters (go build -cover) in front of a scratch valkey-server, run twice
# with the same commands but for the DEL (SET resource:lock abc NX PX
# 30000, GET, then DEL in the second run only); a file counts when a block
# of it ran more often in the second run. Rule: *:lock, release: rewrite; one event loop, as by default.
# Prints the count and the files by package. Needs valkey-server and
# valkey-cli on PATH; ports 17390 and 17391 free.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
w=$(mktemp -d)
trap 'valkey-cli -p 17390 shutdown nosave >/dev/null 2>&1 || true; rm -rf "$w"' EXIT
(cd "$root" && go build -cover -covermode=atomic -coverpkg=./... -o "$w/lp" ./cmd/lockproxy)
cat >"$w/cfg.yaml" <<'YAML'
listen: 127.0.0.1:17391
upstream:
  addr: 127.0.0.1:17390
locks:
  - pattern: "*:lock"
    release: rewrite
YAML
valkey-server --port 17390 --save '' --appendonly no --daemonize yes >/dev/null
run() {
  local dir=$1 extra=$2
  mkdir -p "$dir"
  GOCOVERDIR=$dir "$w/lp" --config "$w/cfg.yaml" >"$dir.log" 2>&1 &
  local pid=$!
  for _ in $(seq 100); do valkey-cli -p 17391 PING >/dev/null 2>&1 && break; sleep 0.1; done
  printf 'SET resource:lock abc NX PX 30000\r\nGET resource:lock\r\n%s' "$extra" | valkey-cli -p 17391 >/dev/null
  kill -TERM "$pid"
  wait "$pid" || true
  valkey-cli -p 17390 FLUSHALL >/dev/null
}
run "$w/c1" ""
run "$w/c2" $'DEL resource:lock\r\n'
go tool covdata textfmt -i="$w/c1" -o "$w/c1.txt"
go tool covdata textfmt -i="$w/c2" -o "$w/c2.txt"
python3 - "$w/c1.txt" "$w/c2.txt" <<'PY'
import sys
def load(f):
    d = {}
    for l in open(f):
        if l.startswith('mode:'):
            continue
        blk, _, c = l.rsplit(' ', 2)
        d[blk] = d.get(blk, 0) + int(c)
    return d
a, b = load(sys.argv[1]), load(sys.argv[2])
files = sorted({k.split(':')[0].split('lockproxy/lockproxy/')[-1] for k, v in b.items() if v > a.get(k, 0)})
by = {}
for f in files:
    by.setdefault(f.rsplit('/', 1)[0] if '/' in f else '.', []).append(f.rsplit('/', 1)[-1])
print(len(files), 'files')
for p, fs in sorted(by.items()):
    print('  %-10s %2d  %s' % (p, len(fs), ' '.join(fs)))
PY
