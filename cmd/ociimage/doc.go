// Command ociimage assembles lockproxy's container image as an OCI image
// layout without a container engine: one layer holding the static binary
// at /lockproxy and the build machine's CA roots at
// /etc/ssl/certs/ca-certificates.crt (-ca-roots), and the configuration
// deploy/container/Containerfile gives (entrypoint, non-root user, ports
// 6380 and 9380, version label).
//
//	go run ./cmd/ociimage -binary bin/lockproxy -version v1.2.3 -out bin/image
//
// The result loads into any registry or engine (skopeo copy
// oci:bin/image docker://..., podman load). It is the CI's stand-in for
// `docker build`, which needs a daemon CI does not have.
//
// It must not import lockproxy's packages: it packs a binary built
// before it, whatever that binary is.
package main
