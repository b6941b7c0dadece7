#!/usr/bin/env bash
# Installs what lockproxy's run and tests need and is not there yet:
# valkey-server 8 (Debian bookworm-backports), valkey-tools (valkey-cli, which
# the cluster tests create their local cluster with,
# valkey-benchmark), valkey-sentinel, and redis-server 7.0 (the second
# server the tests run against). Does nothing when all are present.
# `deps.sh bench` also installs nutcracker (twemproxy), the reference proxy
# `make bench` measures beside lockproxy; the tests do not need it.
# `deps.sh suite` also installs tcl (tclsh), which Valkey's own test suite
# runs on (`make valkey-suite`).
# `deps.sh ops` also installs promtool (Debian's prometheus package) and
# systemd-analyze (systemd), which `make ops-check` runs over deploy/.
# Needs root (or sudo) for apt-get on Debian 12.
set -euo pipefail

need=()
[ "${1:-}" = bench ] && { command -v nutcracker >/dev/null || [ -x /usr/sbin/nutcracker ] || need+=(nutcracker); }
[ "${1:-}" = suite ] && { command -v tclsh >/dev/null || need+=(tcl); }
if [ "${1:-}" = ops ]; then
  command -v promtool >/dev/null || need+=(prometheus)
  command -v systemd-analyze >/dev/null || need+=(systemd)
fi
command -v valkey-server >/dev/null || need+=(valkey-server)
command -v valkey-cli >/dev/null || need+=(valkey-tools)
command -v valkey-sentinel >/dev/null || need+=(valkey-sentinel)
command -v redis-server >/dev/null || need+=(redis-server)
[ ${#need[@]} -eq 0 ] && exit 0

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "deps: need root to install ${need[*]}" >&2; exit 1; }
  sudo="sudo"
fi
command -v apt-get >/dev/null || { echo "deps: install ${need[*]} with your package manager (Valkey 8, Redis 7)" >&2; exit 1; }
export DEBIAN_FRONTEND=noninteractive

# valkey-server 8 is in bookworm-backports; add the suite when missing.
if ! grep -rqs 'bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/; then
  $sudo tee /etc/apt/sources.list.d/lockproxy-backports.sources >/dev/null <<'SRC'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
fi
$sudo apt-get update -qq
# Valkey from bookworm-backports; the rest (redis-server, nutcracker) from
# bookworm itself; the ops tools without their recommends (prometheus would
# bring node-exporter, systemd dbus and a time daemon: only the two
# commands are wanted).
valkey=()
plain=()
tools=()
for p in "${need[@]}"; do
  case $p in
    valkey-*) valkey+=("$p") ;;
    prometheus | systemd) tools+=("$p") ;;
    *) plain+=("$p") ;;
  esac
done
[ ${#valkey[@]} -gt 0 ] && $sudo apt-get install -y -qq -t bookworm-backports "${valkey[@]}" >/dev/null
[ ${#plain[@]} -gt 0 ] && $sudo apt-get install -y -qq "${plain[@]}" >/dev/null
[ ${#tools[@]} -gt 0 ] && $sudo apt-get install -y -qq --no-install-recommends "${tools[@]}" >/dev/null
# Packaged services may start on install; lockproxy's tests start their own
# servers on free ports, and `make run` starts one only when none answers.
for svc in valkey-server redis-server valkey-sentinel nutcracker prometheus; do
  $sudo service "$svc" stop >/dev/null 2>&1 || true
done
echo "deps: installed ${need[*]}"
