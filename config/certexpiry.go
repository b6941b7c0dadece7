package config

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"time"
)

// The expiry of the certificates the TLS settings name, for the
// certificate-expiry gauge: read when the files are read (at start and
// at each reload).

// FileNotAfter is when the first of the PEM certificates in the file at
// path expires (a CA file may hold several: the bundle stops verifying
// what the first one signed when it expires).
func FileNotAfter(path string) (time.Time, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return time.Time{}, err
	}
	return PEMNotAfter(data, path)
}

// PEMNotAfter is FileNotAfter of PEM data; name is the file's, for errors.
func PEMNotAfter(data []byte, name string) (time.Time, error) {
	var first time.Time
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return time.Time{}, fmt.Errorf("%s: %w", name, err)
		}
		if first.IsZero() || c.NotAfter.Before(first) {
			first = c.NotAfter
		}
	}
	if first.IsZero() {
		return time.Time{}, fmt.Errorf("%s: no PEM certificates found", name)
	}
	return first, nil
}

// LeafNotAfter is when the certificate a TLS side presents expires; false
// when it has none.
func LeafNotAfter(c *tls.Config) (time.Time, bool) {
	if c == nil || len(c.Certificates) == 0 {
		return time.Time{}, false
	}
	cert := c.Certificates[0]
	if cert.Leaf != nil {
		return cert.Leaf.NotAfter, true
	}
	if len(cert.Certificate) == 0 {
		return time.Time{}, false
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		return time.Time{}, false
	}
	return leaf.NotAfter, true
}
