package config

import (
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

// writePair writes a self-signed certificate and its key as dir/NAME.crt
// and dir/NAME.key.
func writePair(t *testing.T, dir, name string) (cert, key string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalPKCS8PrivateKey(k)
	cert, key = filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	if err := os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	return cert, key
}

// check-config loads each certificate with its key and each CA file,
// naming the files (on main a mismatched pair and a CA file without a
// certificate passed, and the start failed with "tls: tls: ..." and no
// file name).
func TestTLSFilesLoaded(t *testing.T) {
	dir := t.TempDir()
	aCert, _ := writePair(t, dir, "a")
	_, bKey := writePair(t, dir, "b")
	junk := filepath.Join(dir, "junk.pem")
	if err := os.WriteFile(junk, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	data := "tls:\n  cert_file: a.crt\n  key_file: b.key\n  client_ca_file: junk.pem\nupstream:\n  tls:\n    enabled: true\n    ca_file: junk.pem\n"
	_, err := Parse(filepath.Join(dir, "lockproxy.yaml"), []byte(data))
	got := ""
	if err != nil {
		got = err.Error()
	}
	for _, want := range []string{
		`lockproxy.yaml:2: tls.cert_file: "` + aCert + `" and "` + bKey + `" (key_file) cannot be used together: tls: private key does not match public key`,
		`lockproxy.yaml:4: tls.client_ca_file: "` + junk + `" holds no PEM certificate`,
		`lockproxy.yaml:8: upstream.tls.ca_file: "` + junk + `" holds no PEM certificate`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
}
