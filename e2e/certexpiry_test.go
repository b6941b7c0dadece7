package e2e_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"path/filepath"
	"testing"
	"time"
)

// selfSigned writes a self-signed certificate for 127.0.0.1 that expires
// at notAfter, and its key, to dir/name.crt and dir/name.key.
func selfSigned(t *testing.T, dir, name string, notAfter time.Time) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, NotBefore: time.Now().Add(-time.Hour), NotAfter: notAfter,
		IsCA: true, BasicConstraintsValid: true,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile = writeFile(t, filepath.Join(dir, name+".crt"), string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})))
	keyFile = writeFile(t, filepath.Join(dir, name+".key"), string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})))
	return certFile, keyFile
}

// tlsListenerEnv is a proxy whose client listener has a certificate (valid
// for a day): it serves the certificate series.
func tlsListenerEnv(t *testing.T) *env {
	t.Helper()
	cert, key := selfSigned(t, t.TempDir(), "listener", time.Now().Add(24*time.Hour))
	e, _ := fileEnv(t, fmt.Sprintf("tls:\n  cert_file: %s\n  key_file: %s\n", cert, key))
	return e
}

// lockproxy_certificate_not_after_timestamp_seconds gives each certificate's
// expiry, read at start and again at a reload that reads renewed files.
func TestCertificateExpiryGauge(t *testing.T) {
	dir := t.TempDir()
	day := 24 * time.Hour
	first := time.Now().Add(10 * day).Truncate(time.Second)
	caExpiry := time.Now().Add(300 * day).Truncate(time.Second)
	cert, key := selfSigned(t, dir, "listener", first)
	ca, _ := selfSigned(t, dir, "clients-ca", caExpiry)
	e, _ := fileEnv(t, fmt.Sprintf("tls:\n  cert_file: %s\n  key_file: %s\n  client_ca_file: %s\n", cert, key, ca))

	m := metrics(t, e)
	eq(t, metric(t, m, `lockproxy_certificate_not_after_timestamp_seconds{certificate="client-listener"}`), float64(first.Unix()))
	eq(t, metric(t, m, `lockproxy_certificate_not_after_timestamp_seconds{certificate="client-ca"}`), float64(caExpiry.Unix()))
	if _, ok := m[`lockproxy_certificate_not_after_timestamp_seconds{certificate="upstream-client"}`]; ok {
		t.Error("no upstream TLS, yet an upstream-client certificate")
	}

	// Renewed at the same paths, then reloaded (as SIGHUP does).
	renewed := time.Now().Add(90 * day).Truncate(time.Second)
	selfSigned(t, dir, "listener", renewed)
	if _, err := e.p.Reload(); err != nil {
		t.Fatal(err)
	}
	m = metrics(t, e)
	eq(t, metric(t, m, `lockproxy_certificate_not_after_timestamp_seconds{certificate="client-listener"}`), float64(renewed.Unix()))
	eq(t, metric(t, m, `lockproxy_certificate_not_after_timestamp_seconds{certificate="client-ca"}`), float64(caExpiry.Unix()))
}
