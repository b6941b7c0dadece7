package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// check-config says when a fence guard also covers the lock's own fence
// counter (the documented "{base}:*" covers "{base}:fence"), and that those
// keys stay lockproxy's; a guard that does not cover them gets no note.
func TestCheckConfigNotesGuardsOverOwnKeys(t *testing.T) {
	dir := t.TempDir()
	write := func(name, guards string) string {
		p := filepath.Join(dir, name)
		cfg := "listen: 127.0.0.1:0\nupstream:\n  addr: 127.0.0.1:6379\nlocks:\n  - pattern: \"{*}:mutex\"\n    fence:\n      counter: \"{base}:fence\"\n      guards: [" + guards + "]\n"
		if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		guards string
		note   bool
	}{{`"{base}:*"`, true}, {`"{base}:data", "{base}:items:*"`, false}} {
		p := write(strings.NewReplacer(`"`, "", ":", "", "*", "", "{", "", "}", "", ",", "", " ", "").Replace(tc.guards)+".yaml", tc.guards)
		var out, errb bytes.Buffer
		if code := checkConfig(p, &out, &errb); code != 0 {
			t.Fatalf("%s: exit %d: %s", tc.guards, code, errb.String())
		}
		note := strings.Contains(out.String(), `note: rule 1 "{*}:mutex": guards[0] "{base}:*" also matches the lock's fence counter "{base}:fence"`)
		if note != tc.note || !strings.HasSuffix(out.String(), p+": ok\n") {
			t.Errorf("guards %s: got %q, want a note: %v", tc.guards, out.String(), tc.note)
		}
	}
}

// check-config accepts a cluster upstream and refuses one beside addr, at
// the line of addr; in front of a cluster it refuses lock patterns whose
// records cannot share their key's slot and guards outside the lock's slot.
func TestCheckConfigCluster(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, cfg, want string
		code            int
	}{
		{"ok.yaml", "cluster_face: single_node\nupstream:\n  cluster:\n    seeds: [127.0.0.1:7000, 127.0.0.1:7001]\n", "ok.yaml: ok\n", 0},
		{"both.yaml", "upstream:\n  addr: 127.0.0.1:6379\n  cluster:\n    seeds: [127.0.0.1:7000]\n",
			"both.yaml:2: upstream.addr: cannot be set with upstream.cluster", 1},
		{"brace.yaml", "upstream:\n  cluster:\n    seeds: [127.0.0.1:7000]\nlocks:\n  - pattern: \"job}*:lock\"\n",
			`brace.yaml:5: locks[0].pattern: "job}*:lock": in a cluster the lock records of its keys (e.g. "job}sample:lock") cannot share the key's hash slot`, 1},
		{"guard.yaml", "upstream:\n  cluster:\n    seeds: [127.0.0.1:7000]\nlocks:\n  - pattern: \"*:lock\"\n    fence:\n      counter: \"{{key}}:fence\"\n      guards: [\"{{key}}:*\", \"audit:{key}\"]\n",
			`guard.yaml:8:29: locks[0].fence.guards[1]: "audit:{key}" guards, for lock "sample:lock", keys in hash slot`, 1},
	} {
		p := filepath.Join(dir, tc.name)
		if err := os.WriteFile(p, []byte(tc.cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		var out, errb bytes.Buffer
		code := checkConfig(p, &out, &errb)
		if code != tc.code || !strings.Contains(out.String()+errb.String(), tc.want) {
			t.Errorf("%s: exit %d, out %q, err %q; want exit %d with %q", tc.name, code, out.String(), errb.String(), tc.code, tc.want)
		}
	}
}

// check-config prints the warnings (on main it passed both silently).
func TestCheckConfigWarns(t *testing.T) {
	path := writeConfig(t, "listen: 127.0.0.1:6379\nupstream:\n  addr: 127.0.0.1:6379\nlocks:\n  - pattern: \"*\"\n")
	code, out, errs := runCLI("check-config", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{
		path + `: warning: locks[0].pattern: "*" matches every key`,
		path + ": warning: listen: 127.0.0.1:6379 is upstream.addr",
		path + ": ok",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
}

// check-config refuses a password or password hash that the project's
// tests or docs publish, naming the setting (on main it passed the shipped
// examples' "0nc4ll" hash silently), and accepts passwords of one's own.
func TestCheckConfigRefusesPublishedPasswords(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "own"), []byte("a-password-of-our-own\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, cfg, want string
		code            int
	}{
		{"hash.yaml", "admin:\n  users:\n    - {name: oncall, password_sha256: b428cf4d1139450e9d89e31af0721625f90d3362b14787cc11acbcdd953a0f7b, role: operate}\n",
			`hash.yaml: admin.users[0].password_sha256: is the SHA-256 of "0nc4ll", a password published in lockproxy's tests or docs`, 1},
		{"plain.yaml", "admin:\n  password: s3cret\n",
			`plain.yaml: admin.password: "s3cret" is a password published in lockproxy's tests or docs`, 1},
		{"upstream.yaml", "upstream:\n  password: change-me\n",
			`upstream.yaml: upstream.password: "change-me" is a password published`, 1},
		{"own.yaml", "admin:\n  users:\n    - {name: oncall, password_file: own, role: operate}\n", "own.yaml: ok\n", 0},
	} {
		p := filepath.Join(dir, tc.name)
		if err := os.WriteFile(p, []byte(tc.cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		var out, errb bytes.Buffer
		code := checkConfig(p, &out, &errb)
		if code != tc.code || !strings.Contains(out.String()+errb.String(), tc.want) {
			t.Errorf("%s: exit %d, out %q, err %q; want exit %d with %q", tc.name, code, out.String(), errb.String(), tc.code, tc.want)
		}
		if tc.code != 0 && strings.Contains(out.String(), ": ok") {
			t.Errorf("%s: refused yet printed ok: %q", tc.name, out.String())
		}
	}
}

// check-config warns of an expired certificate and of one that expires
// within 30 days (on main it accepted both silently); the file stays valid.
func TestCheckConfigWarnsOfCertificateExpiry(t *testing.T) {
	dir := t.TempDir()
	expired, expiredKey := certUntil(t, dir, "expired", time.Now().Add(-time.Hour))
	soon, soonKey := certUntil(t, dir, "soon", time.Now().Add(10*24*time.Hour))
	_, _ = certUntil(t, dir, "later", time.Now().Add(365*24*time.Hour))
	p := filepath.Join(dir, "tls.yaml")
	cfg := "tls:\n  cert_file: " + expired + "\n  key_file: " + expiredKey + "\n  client_ca_file: " + filepath.Join(dir, "later.crt") + "\n" +
		"upstream:\n  tls:\n    enabled: true\n    cert_file: " + soon + "\n    key_file: " + soonKey + "\n"
	if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := checkConfig(p, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range []string{
		p + `: warning: tls.cert_file: the certificate "CN=expired" in "` + expired + `" expired on `,
		p + `: warning: upstream.tls.cert_file: the certificate "CN=soon" in "` + soon + `" expires on `,
		p + ": ok\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("missing %q in:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "later") {
		t.Errorf("a certificate valid for a year is warned of:\n%s", out.String())
	}
}

// certUntil writes a self-signed certificate valid until notAfter and its
// key as dir/NAME.crt and dir/NAME.key.
func certUntil(t *testing.T, dir, name string, notAfter time.Time) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: notAfter.Add(-48 * time.Hour), NotAfter: notAfter, IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}
