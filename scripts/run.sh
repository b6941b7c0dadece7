#!/usr/bin/env bash
# scripts/run.sh [CONFIG] — what `make run` calls.
#
# Builds bin/lockproxy and runs it in the foreground with CONFIG (default
# config.example.yaml). If nothing listens on the config's upstream address
# (and that address is on loopback) a throwaway valkey-server is started there
# first — no persistence, its own temp dir — so `make run` works on a bare
# machine. Ctrl-C stops both (the exit trap makes sure of that valkey-server
# however the script ends); a valkey-server we did not start is never touched.
#
# GOMAXPROCS and any other environment is passed through to lockproxy.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# Resolve CONFIG against the caller's directory before we cd to the repo root,
# so `scripts/run.sh ./my.yaml` works from anywhere.
# The Makefile passes the default explicitly, so only the default may be
# missing (handled below); any other missing file is a typo.
default_config=$root/config.example.yaml
config_arg=${1:-$default_config}
if [[ -d $(dirname "$config_arg") ]]; then
  config=$(cd "$(dirname "$config_arg")" && pwd)/$(basename "$config_arg")
else
  config=$config_arg
fi
if [[ ! -f $config && $config != "$default_config" ]]; then
  echo "run.sh: config file not found: $config_arg" >&2
  exit 1
fi
cd "$root"

# tmp holds the throwaway valkey's data/log and, when needed, a fallback config.
tmp=""
valkey_pid=""
proxy_pid=""

cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  # Proxy first, so it does not log a burst of upstream errors while valkey goes.
  for pid in $proxy_pid $valkey_pid; do
    kill -TERM "$pid" 2>/dev/null || true
  done
  for pid in $proxy_pid $valkey_pid; do
    wait "$pid" 2>/dev/null || true
  done
  [[ -n $tmp ]] && rm -rf "$tmp"
  exit "$rc"
}
trap cleanup EXIT
# Exit on signals so the EXIT trap runs; 130/143 are the usual shell codes.
trap 'exit 130' INT
trap 'exit 143' TERM

# yaml_upstream_addr FILE: the `addr:` value inside the top-level `upstream:`
# block. Deliberately simple (block-style YAML only, first addr: wins); it only
# decides whether to start a local valkey — lockproxy itself parses the YAML.
yaml_upstream_addr() {
  sed -n '/^upstream:[[:space:]]*\(#.*\)\{0,1\}$/,/^[^[:space:]#]/ s/^[[:space:]]\{1,\}addr:[[:space:]]*//p' "$1" |
    head -n 1 | sed -e 's/[[:space:]]#.*$//' -e 's/[[:space:]]*$//' -e "s/^[\"']//" -e "s/[\"']\$//"
}

# yaml_listen FILE: the top-level `listen:` value (only used for the hint).
yaml_listen() {
  sed -n 's/^listen:[[:space:]]*//p' "$1" |
    head -n 1 | sed -e 's/[[:space:]]#.*$//' -e 's/[[:space:]]*$//' -e "s/^[\"']//" -e "s/[\"']\$//"
}

# split_addr ADDR: prints "host port"; accepts host:port and [v6]:port.
split_addr() {
  local addr=$1 host port
  port=${addr##*:}
  host=${addr%:*}
  host=${host#[}
  host=${host%]}
  [[ -n $host ]] || host=127.0.0.1
  printf '%s %s\n' "$host" "$port"
}

# is_listening HOST PORT: true if a TCP connect succeeds. We test the socket,
# not PING, so a password-protected upstream (NOAUTH reply) still counts as
# "something is there" and we never start a second server on its port.
is_listening() {
  # shellcheck disable=SC2016 # $1/$2 are expanded by the inner bash
  timeout 2 bash -c 'exec 3<>"/dev/tcp/$1/$2"' _ "$1" "$2" 2>/dev/null
}

is_loopback() {
  [[ $1 == 127.* || $1 == localhost || $1 == ::1 ]]
}

if [[ ! -f $config ]]; then
  # The default config is missing (e.g. not written yet): fall back to the
  # minimal config so `make run` still works.
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/lockproxy-run.XXXXXX")
  echo "run.sh: $config not found; using a minimal config (listen 127.0.0.1:6380, upstream 127.0.0.1:6379)" >&2
  config=$tmp/config.yaml
  printf 'listen: 127.0.0.1:6380\nupstream:\n  addr: 127.0.0.1:6379\n' >"$config"
fi

echo "run.sh: building bin/lockproxy" >&2
go build -o bin/lockproxy ./cmd/lockproxy

upstream=$(yaml_upstream_addr "$config")
upstream=${upstream:-127.0.0.1:6379}
read -r up_host up_port <<<"$(split_addr "$upstream")"

if ! is_loopback "$up_host"; then
  # Never a server of ours to start, and not ours to probe: lockproxy reports
  # an unreachable upstream itself.
  echo "run.sh: upstream $upstream is not on loopback; using it as configured" >&2
elif is_listening "$up_host" "$up_port"; then
  if ! valkey-cli -h "$up_host" -p "$up_port" PING 2>/dev/null | grep -qx PONG; then
    echo "run.sh: $upstream is listening but did not answer PONG (auth required?); using it as is" >&2
  fi
else
  command -v valkey-server >/dev/null || { echo "run.sh: nothing on $upstream and valkey-server is not installed" >&2; exit 1; }
  [[ -n $tmp ]] || tmp=$(mktemp -d "${TMPDIR:-/tmp}/lockproxy-run.XXXXXX")
  bind=$up_host
  [[ $bind == localhost ]] && bind=127.0.0.1
  echo "run.sh: nothing answers on $upstream; starting a throwaway valkey-server there (no persistence, dir $tmp)" >&2
  # Ctrl-C reaches it too (valkey-server handles SIGINT as a shutdown); the
  # EXIT trap stops it in every other case: lockproxy exiting, a failed
  # start, SIGTERM to this script.
  valkey-server --bind "$bind" --port "$up_port" --save "" --appendonly no \
    --dir "$tmp" --logfile "$tmp/valkey.log" --daemonize no &
  valkey_pid=$!
  for _ in $(seq 100); do
    valkey-cli -h "$up_host" -p "$up_port" PING 2>/dev/null | grep -qx PONG && break
    kill -0 "$valkey_pid" 2>/dev/null || { echo "run.sh: valkey-server exited:" >&2; tail -n 20 "$tmp/valkey.log" >&2; exit 1; }
    sleep 0.1
  done
  valkey-cli -h "$up_host" -p "$up_port" PING 2>/dev/null | grep -qx PONG ||
    { echo "run.sh: valkey-server did not answer PING within 10s" >&2; exit 1; }
fi

listen=$(yaml_listen "$config")
listen=${listen:-127.0.0.1:6380}
read -r l_host l_port <<<"$(split_addr "$listen")"
case $l_host in
  127.0.0.1 | localhost | 0.0.0.0 | ::) hint="valkey-cli -p $l_port" ;;
  *) hint="valkey-cli -h $l_host -p $l_port" ;;
esac
echo "run.sh: lockproxy $listen -> upstream $upstream (config $config)" >&2
echo "run.sh: connect with:  $hint      (Ctrl-C stops)" >&2

if [[ -z $valkey_pid && -z $tmp ]]; then
  # Nothing of ours to clean up: hand the process over, so signals go
  # straight to lockproxy and its exit code is the script's.
  trap - EXIT INT TERM
  exec bin/lockproxy --config "$config"
fi

# We own a valkey-server (or a temp config), so stay around to clean up.
# lockproxy runs as a child we wait on: `wait` returns as soon as a signal
# arrives, and the traps above then stop lockproxy before valkey.
bin/lockproxy --config "$config" &
proxy_pid=$!
wait "$proxy_pid"
