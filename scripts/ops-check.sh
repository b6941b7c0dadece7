#!/usr/bin/env bash
# Checks the operations kit in deploy/ with the tools it is written for:
# the Prometheus rules (promtool check rules, and promtool test rules with
# the unit tests in deploy/prometheus/tests/), the systemd unit
# (systemd-analyze verify, and its exposure score), every example
# configuration (lockproxy check-config: valid, no warning, no published
# password), and the container image (make image; loaded into podman when
# it is installed), all built in a temporary directory. `make ops-check`;
# .ci/run runs it. The Kubernetes manifests, the Helm chart and the image's
# contents are checked by `go test` (e2e/deploy_k8s_test.go, deploy/helm,
# cmd/ociimage).
# The dashboard is checked by `go test` (e2e/deploy_test.go), against a running
# proxy's /metrics.
set -euo pipefail
cd "$(dirname "$0")/.."
# Build into a throw-away directory: bin/lockproxy and bin/image stay what
# `make build` and `make image` last made.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
make -s build BIN="$tmp/bin"
promtool --version 2>&1 | sed -n 1p
systemd-analyze --version | sed -n 1p

promtool check rules deploy/prometheus/lockproxy.rules.yml
promtool test rules deploy/prometheus/tests/*.yml

# verify checks that ExecStart's binary exists: point the unit at the one
# just built instead of /usr/local/bin/lockproxy.
sed "s#/usr/local/bin/lockproxy#$tmp/bin/lockproxy#g" deploy/systemd/lockproxy.service >"$tmp/lockproxy.service"
systemd-analyze verify "$tmp/lockproxy.service"
# Exposure 1.1 today (0 = locked down, 10 = none); fail when hardening
# lines go missing and it passes 2.0.
systemd-analyze security --offline=true --threshold=20 "$tmp/lockproxy.service" | tail -1

# check-config also loads the TLS files (each certificate with its key, each
# CA file) and the password files. The examples name theirs relative to the
# file's directory; give them throw-away stand-ins in a copy: self-signed
# certificates (X.crt with X.key, valid 60 days so that no expiry warning
# shows) and random passwords (the examples ship no password: check-config
# refuses the ones lockproxy's tests and docs publish).
cp -r deploy/examples "$tmp/examples"
for f in $(grep -Eho 'tls/[A-Za-z0-9_.-]+\.(crt|pem)' deploy/examples/*.yaml | sort -u); do
  mkdir -p "$tmp/examples/$(dirname "$f")"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 60 -subj "/CN=$(basename "$f")" \
    -keyout "$tmp/examples/${f%.*}.key" -out "$tmp/examples/$f" 2>/dev/null
done
for f in $(grep -Eho '^ *password_file: *secrets/[A-Za-z0-9_.-]+' deploy/examples/*.yaml | sed 's/.*password_file: *//' | sort -u); do
  mkdir -p "$tmp/examples/$(dirname "$f")"
  openssl rand -hex 16 >"$tmp/examples/$f"
done
for f in "$tmp"/examples/*.yaml; do
  out=$("$tmp/bin/lockproxy" check-config "$f")
  if grep -q ': warning: ' <<<"$out"; then
    echo "ops-check: deploy/examples/$(basename "$f") has warnings:" >&2
    sed "s#$tmp/examples/#deploy/examples/#" <<<"$out" >&2
    exit 1
  fi
  echo "check-config deploy/examples/$(basename "$f"): ok"
done

# The container image as an OCI layout (no engine needed), and when podman is
# there, loaded and inspected as an engine sees it (podman cannot run
# containers on every machine: running is left to cmd/ociimage's test).
make -s image VERSION=ops-check BIN="$tmp/bin"
if command -v podman >/dev/null; then
  ref=$(podman load -q -i "$tmp/bin/image" | sed -n 's/^Loaded image: //p' | tail -1)
  user=$(podman image inspect --format '{{.Config.User}}' "$ref")
  echo "podman: $ref runs as $user"
  [ "$user" = 65532:65532 ] || { echo "ops-check: the image runs as \"$user\", want 65532:65532" >&2; exit 1; }
  podman rmi -f "$ref" >/dev/null
else
  echo "image: written and removed again (podman not installed: not loaded)"
fi
