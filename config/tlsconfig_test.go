package config

import (
	"crypto/tls"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The TLS configurations built from the settings' files: the upstream's
// server name defaults to the address's host, a CA file becomes the roots
// (the listener's: required client certificates), and a file that cannot
// be used is named in the error.
func TestTLSConfigFromFiles(t *testing.T) {
	dir := t.TempDir()
	aCert, aKey := writePair(t, dir, "a")
	_, bKey := writePair(t, dir, "b")
	junk := filepath.Join(dir, "junk.pem")
	if err := os.WriteFile(junk, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	u := UpstreamConfig{Addr: "valkey.example:6380", TLS: UpstreamTLS{Enabled: true, CAFile: aCert, CertFile: aCert, KeyFile: aKey}}
	tc, err := u.TLSConfig()
	if err != nil {
		t.Fatal(err)
	}
	if tc.ServerName != "valkey.example" || tc.RootCAs == nil || len(tc.Certificates) != 1 || tc.MinVersion != tls.VersionTLS12 {
		t.Errorf("upstream: server name %q, roots %v, %d certificates, min version %x", tc.ServerName, tc.RootCAs != nil, len(tc.Certificates), tc.MinVersion)
	}
	u.TLS.ServerName = "other.example"
	if tc, err := u.TLSConfig(); err != nil || tc.ServerName != "other.example" {
		t.Errorf("upstream with server_name: %v, %v", tc, err)
	}
	u.TLS.KeyFile = bKey
	if _, err := u.TLSConfig(); err == nil || !strings.Contains(err.Error(), "upstream.tls.cert_file "+aCert+" and key_file "+bKey) {
		t.Errorf("upstream, mismatched pair: %v", err)
	}
	u.TLS = UpstreamTLS{Enabled: true, CAFile: junk}
	if _, err := u.TLSConfig(); err == nil || !strings.Contains(err.Error(), junk+": no PEM certificates found") {
		t.Errorf("upstream, junk CA file: %v", err)
	}

	l := ListenerTLS{CertFile: aCert, KeyFile: aKey}
	tc, err = l.TLSConfig()
	if err != nil {
		t.Fatal(err)
	}
	if len(tc.Certificates) != 1 || tc.ClientAuth != tls.NoClientCert {
		t.Errorf("listener: %d certificates, client auth %v", len(tc.Certificates), tc.ClientAuth)
	}
	l.ClientCAFile = aCert
	if tc, err = l.TLSConfig(); err != nil || tc.ClientCAs == nil || tc.ClientAuth != tls.RequireAndVerifyClientCert {
		t.Errorf("listener with a client CA: %v, %v", tc, err)
	}
	l.KeyFile = bKey
	if _, err := l.TLSConfig(); err == nil || !strings.Contains(err.Error(), "tls.cert_file "+aCert+" and key_file "+bKey) {
		t.Errorf("listener, mismatched pair: %v", err)
	}
}
