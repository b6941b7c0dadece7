package config

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"testing"
	"time"
)

func certPEM(t *testing.T, notAfter time.Time) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "x"},
		NotBefore: notAfter.Add(-time.Hour), NotAfter: notAfter}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// A bundle's expiry is its first certificate's to expire; a file without
// certificates is an error naming it.
func TestPEMNotAfter(t *testing.T) {
	early := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	late := early.Add(365 * 24 * time.Hour)
	bundle := append(append(certPEM(t, late), []byte("# a comment\n")...), certPEM(t, early)...)
	got, err := PEMNotAfter(bundle, "ca.pem")
	if err != nil || !got.Equal(early) {
		t.Errorf("PEMNotAfter = %v, %v; want %v", got, err, early)
	}
	if _, err := PEMNotAfter([]byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"), "key.pem"); err == nil || err.Error() != "key.pem: no PEM certificates found" {
		t.Errorf("a file without certificates: %v", err)
	}
	if _, ok := LeafNotAfter(&tls.Config{}); ok {
		t.Error("a configuration without a certificate has no expiry")
	}
	block, _ := pem.Decode(certPEM(t, late))
	if got, ok := LeafNotAfter(&tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{block.Bytes}}}}); !ok || !got.Equal(late) {
		t.Errorf("LeafNotAfter = %v, %v; want %v", got, ok, late)
	}
}
