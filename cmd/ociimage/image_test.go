package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"crypto/x509"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockproxy/lockproxy/internal/valkeytest"
)

// readBlob reads a blob of the layout and checks its digest.
func readBlob(t *testing.T, dir, digest string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "blobs", "sha256", strings.TrimPrefix(digest, "sha256:")))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	if "sha256:"+hex.EncodeToString(sum[:]) != digest {
		t.Fatalf("blob %s does not match its digest", digest)
	}
	return b
}

// The image is built from a binary built as `make build` builds it, then
// inspected as an engine would read it: the layout, digests, config (non-root
// user, entrypoint, version label, the client and metrics ports), a static
// binary and the CA roots in the only layer; the binary taken out of the
// image reports the version and serves, with nothing to write on its file
// system.
func TestImage(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "lockproxy")
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-X main.version=v0.0.0-imagetest", "-o", bin, "../lockproxy")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	layout := filepath.Join(dir, "image")
	if err := buildImage(bin, caRootsPath, "v0.0.0-imagetest", layout); err != nil {
		t.Fatal(err)
	}

	var index struct {
		Manifests []descriptor `json:"manifests"`
	}
	b, err := os.ReadFile(filepath.Join(layout, "index.json"))
	if err == nil {
		err = json.Unmarshal(b, &index)
	}
	if err != nil || len(index.Manifests) != 1 {
		t.Fatalf("index.json: %v %s", err, b)
	}
	var manifest struct {
		Config descriptor   `json:"config"`
		Layers []descriptor `json:"layers"`
	}
	if err := json.Unmarshal(readBlob(t, layout, index.Manifests[0].Digest), &manifest); err != nil || len(manifest.Layers) != 1 {
		t.Fatalf("manifest: %v %+v", err, manifest)
	}
	var config struct {
		Config struct {
			User         string
			Entrypoint   []string
			Labels       map[string]string
			ExposedPorts map[string]struct{}
		} `json:"config"`
		RootFS struct {
			DiffIDs []string `json:"diff_ids"`
		} `json:"rootfs"`
	}
	if err := json.Unmarshal(readBlob(t, layout, manifest.Config.Digest), &config); err != nil {
		t.Fatal(err)
	}
	c := config.Config
	if c.User == "" || c.User == "0" || strings.HasPrefix(c.User, "0:") || c.User == "root" {
		t.Errorf("the image runs as root: User %q", c.User)
	}
	if strings.Join(c.Entrypoint, " ") != "/lockproxy" || c.Labels["org.opencontainers.image.version"] != "v0.0.0-imagetest" {
		t.Errorf("config: %+v", c)
	}
	// On main: 6380 and 9121, a port nothing listens on.
	_, client := c.ExposedPorts["6380/tcp"]
	_, metricsPort := c.ExposedPorts["9380/tcp"]
	if len(c.ExposedPorts) != 2 || !client || !metricsPort {
		t.Errorf("exposed ports %v, want 6380/tcp (listen) and 9380/tcp (metrics.listen)", c.ExposedPorts)
	}

	// The layer: one file, /lockproxy, static, matching its diff id.
	zr, err := gzip.NewReader(bytes.NewReader(readBlob(t, layout, manifest.Layers[0].Digest)))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(zr)
	if sum := sha256.Sum256(raw); "sha256:"+hex.EncodeToString(sum[:]) != config.RootFS.DiffIDs[0] {
		t.Error("the layer does not match its diff_id")
	}
	tr := tar.NewReader(bytes.NewReader(raw))
	h, err := tr.Next()
	if err != nil || h.Name != "lockproxy" || h.Mode&0o111 == 0 {
		t.Fatalf("layer entry: %+v %v", h, err)
	}
	extracted := filepath.Join(dir, "rootfs-lockproxy")
	data, _ := io.ReadAll(tr)
	if err := os.WriteFile(extracted, data, 0o555); err != nil {
		t.Fatal(err)
	}
	// Then the CA roots (on main the layer held the binary alone, and
	// upstream.tls without ca_file had no roots to check Valkey against).
	var rest []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeDir {
			continue
		}
		rest = append(rest, h.Name)
		if h.Name == "etc/ssl/certs/ca-certificates.crt" {
			pem, _ := io.ReadAll(tr)
			if n := len(pemCerts(pem)); n < 10 || h.Mode&0o444 != 0o444 {
				t.Errorf("the CA roots: %d certificates, mode %o", n, h.Mode)
			}
		}
	}
	if strings.Join(rest, " ") != "etc/ssl/certs/ca-certificates.crt" {
		t.Errorf("the layer's other files: %q, want only the CA roots", rest)
	}
	ef, err := elf.Open(extracted)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ef.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the binary is dynamically linked: scratch has no loader")
		}
	}
	ef.Close()

	out, err := exec.Command(extracted, "version").Output()
	if err != nil || string(out) != "lockproxy v0.0.0-imagetest\n" {
		t.Fatalf("version: %q %v", out, err)
	}

	// Smoke: the image's binary serves in front of Valkey from a read-only
	// directory, and /livez answers.
	srv := valkeytest.Start(t)
	listen, metrics := freeAddr(t), freeAddr(t)
	cfgDir := t.TempDir()
	cfgPath := filepath.Join(cfgDir, "lockproxy.yaml")
	if err := os.WriteFile(cfgPath, []byte(fmt.Sprintf("listen: %s\nupstream:\n  addr: %s\nmetrics:\n  listen: %s\nadmin:\n  password: x\nlocks:\n  - pattern: \"*:lock\"\n", listen, srv.Addr, metrics)), 0o444); err != nil {
		t.Fatal(err)
	}
	_ = os.Chmod(cfgDir, 0o555)
	defer os.Chmod(cfgDir, 0o755)
	run := exec.Command(extracted, "--config", cfgPath)
	run.Dir = cfgDir
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { run.Process.Kill(); run.Wait() }()
	deadline := time.Now().Add(20 * time.Second)
	for {
		res, err := http.Get("http://" + metrics + "/livez")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("/livez never answered: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	nc, err := net.Dial("tcp", listen)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(20 * time.Second))
	fmt.Fprint(nc, "*6\r\n$3\r\nSET\r\n$6\r\na:lock\r\n$1\r\nt\r\n$2\r\nNX\r\n$2\r\nPX\r\n$4\r\n5000\r\n")
	line, err := bufio.NewReader(nc).ReadString('\n')
	if err != nil || line != "+OK\r\n" {
		t.Fatalf("SET through the image's binary: %q %v", line, err)
	}
}

func freeAddr(t *testing.T) string {
	return fmt.Sprintf("127.0.0.1:%d", valkeytest.FreePort(t))
}

// pemCerts counts the parseable certificates of a PEM bundle.
func pemCerts(data []byte) []*x509.Certificate {
	var out []*x509.Certificate
	for {
		var b *pem.Block
		if b, data = pem.Decode(data); b == nil {
			return out
		}
		if c, err := x509.ParseCertificate(b.Bytes); err == nil {
			out = append(out, c)
		}
	}
}

// The Containerfile builds the same image: it exposes the same ports and
// copies the CA roots to the same place.
func TestContainerfileMatches(t *testing.T) {
	b, err := os.ReadFile("../../deploy/container/Containerfile")
	if err != nil {
		t.Fatal(err)
	}
	var exposed []string
	copiesRoots := false
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) > 1 && f[0] == "EXPOSE":
			for _, p := range f[1:] {
				exposed = append(exposed, p+"/tcp")
			}
		case len(f) == 4 && f[0] == "COPY" && f[3] == caRootsPath:
			copiesRoots = true
		}
	}
	if strings.Join(exposed, " ") != strings.Join(ports, " ") {
		t.Errorf("the Containerfile exposes %v, cmd/ociimage %v", exposed, ports)
	}
	if !copiesRoots {
		t.Errorf("the Containerfile copies no CA roots to %s", caRootsPath)
	}
}

// Without CA roots on the build machine the image is not built, and the
// message says what to install.
func TestImageNeedsCARoots(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "lockproxy")
	if err := os.WriteFile(bin, []byte("x"), 0o755); err != nil {
		t.Fatal(err)
	}
	err := buildImage(bin, filepath.Join(dir, "missing.crt"), "v0", filepath.Join(dir, "image"))
	if err == nil || !strings.Contains(err.Error(), "install ca-certificates, or give -ca-roots FILE") {
		t.Fatalf("got %v", err)
	}
}
