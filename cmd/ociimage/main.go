package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"
)

// The image's settings: the Containerfile's, in one place.
const (
	binaryPath = "/lockproxy"
	// caRootsPath is where Go's crypto/x509 looks first for the system's
	// CA roots on Linux: upstream.tls without ca_file checks Valkey's
	// certificate against them.
	caRootsPath = "/etc/ssl/certs/ca-certificates.crt"
	user        = "65532:65532"
)

var (
	entrypoint = []string{binaryPath}
	cmd        = []string{"--config", "/etc/lockproxy/lockproxy.yaml"}
	// The client port (listen) and the metrics port (metrics.listen) the
	// examples and manifests use.
	ports = []string{"6380/tcp", "9380/tcp"}
)

func main() {
	bin := flag.String("binary", "bin/lockproxy", "the static lockproxy binary")
	version := flag.String("version", "dev", "the version label")
	out := flag.String("out", "bin/image", "directory of the OCI image layout to write")
	caRoots := flag.String("ca-roots", caRootsPath, "the CA roots bundle (PEM) to put at "+caRootsPath+" in the image (Debian: apt-get install ca-certificates)")
	flag.Parse()
	if err := buildImage(*bin, *caRoots, *version, *out); err != nil {
		fmt.Fprintln(os.Stderr, "ociimage:", err)
		os.Exit(1)
	}
	fmt.Println("ociimage: wrote", *out)
}

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int               `json:"size"`
	Annotations map[string]string `json:"annotations,omitempty"`
	Platform    map[string]string `json:"platform,omitempty"`
}

func buildImage(binPath, caRoots, version, out string) error {
	bin, err := os.ReadFile(binPath)
	if err != nil {
		return err
	}
	roots, err := os.ReadFile(caRoots)
	if err != nil {
		return fmt.Errorf("the CA roots for %s: %w (install ca-certificates, or give -ca-roots FILE)", caRootsPath, err)
	}
	if !x509.NewCertPool().AppendCertsFromPEM(roots) {
		return fmt.Errorf("the CA roots %s hold no PEM certificate", caRoots)
	}
	if err := os.MkdirAll(filepath.Join(out, "blobs", "sha256"), 0o755); err != nil {
		return err
	}
	put := func(data []byte) (string, error) {
		sum := sha256.Sum256(data)
		d := hex.EncodeToString(sum[:])
		return "sha256:" + d, os.WriteFile(filepath.Join(out, "blobs", "sha256", d), data, 0o644)
	}

	// The layer: /lockproxy, owned by root, executable by all, and the CA
	// roots, readable by all; a fixed time so the same files give the same
	// digest.
	var tarBuf bytes.Buffer
	tw := tar.NewWriter(&tarBuf)
	epoch := time.Unix(0, 0)
	if err := tw.WriteHeader(&tar.Header{Name: binaryPath[1:], Mode: 0o755, Size: int64(len(bin)), ModTime: epoch, Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	if _, err := tw.Write(bin); err != nil {
		return err
	}
	for _, d := range []string{"etc/", "etc/ssl/", "etc/ssl/certs/"} {
		if err := tw.WriteHeader(&tar.Header{Name: d, Mode: 0o755, ModTime: epoch, Typeflag: tar.TypeDir}); err != nil {
			return err
		}
	}
	if err := tw.WriteHeader(&tar.Header{Name: caRootsPath[1:], Mode: 0o644, Size: int64(len(roots)), ModTime: epoch, Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	if _, err := tw.Write(roots); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	diff := sha256.Sum256(tarBuf.Bytes())
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	zw.ModTime = epoch
	if _, err := zw.Write(tarBuf.Bytes()); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	layerDigest, err := put(gz.Bytes())
	if err != nil {
		return err
	}

	exposed := map[string]struct{}{}
	for _, p := range ports {
		exposed[p] = struct{}{}
	}
	labels := map[string]string{
		"org.opencontainers.image.title":   "lockproxy",
		"org.opencontainers.image.version": version,
		"org.opencontainers.image.source":  "https://github.com/lockproxy/lockproxy",
	}
	config, _ := json.Marshal(map[string]any{
		"architecture": runtime.GOARCH,
		"os":           "linux",
		"created":      epoch.UTC().Format(time.RFC3339),
		"config": map[string]any{
			"User":         user,
			"Entrypoint":   entrypoint,
			"Cmd":          cmd,
			"ExposedPorts": exposed,
			"Labels":       labels,
		},
		"rootfs": map[string]any{"type": "layers", "diff_ids": []string{"sha256:" + hex.EncodeToString(diff[:])}},
	})
	configDigest, err := put(config)
	if err != nil {
		return err
	}
	manifest, _ := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.oci.image.manifest.v1+json",
		"config":        descriptor{MediaType: "application/vnd.oci.image.config.v1+json", Digest: configDigest, Size: len(config)},
		"layers":        []descriptor{{MediaType: "application/vnd.oci.image.layer.v1.tar+gzip", Digest: layerDigest, Size: gz.Len()}},
		"annotations":   labels,
	})
	manifestDigest, err := put(manifest)
	if err != nil {
		return err
	}
	index, _ := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.oci.image.index.v1+json",
		"manifests": []descriptor{{MediaType: "application/vnd.oci.image.manifest.v1+json", Digest: manifestDigest, Size: len(manifest),
			Annotations: map[string]string{"org.opencontainers.image.ref.name": version},
			Platform:    map[string]string{"architecture": runtime.GOARCH, "os": "linux"}}},
	})
	if err := os.WriteFile(filepath.Join(out, "index.json"), index, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, "oci-layout"), []byte(`{"imageLayoutVersion":"1.0.0"}`), 0o644)
}
