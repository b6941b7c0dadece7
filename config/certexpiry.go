package config

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"strconv"
	"time"
)

// CertExpirySoon is how far ahead [Config.CertificateWarnings] warns of a
// certificate's end: long enough for a renewal by hand.
const CertExpirySoon = 30 * 24 * time.Hour

// CertificateWarnings lists each certificate in the configured TLS files
// (tls.cert_file, tls.client_ca_file, upstream.tls.ca_file and
// upstream.tls.cert_file) that has expired at now or expires within
// CertExpirySoon, naming the setting, the file and the subject. Files that
// cannot be read are the validation's to report, not this.
func (c *Config) CertificateWarnings(now time.Time) []string {
	var w []string
	for _, f := range []struct{ path, name string }{
		{"tls.cert_file", c.TLS.CertFile},
		{"tls.client_ca_file", c.TLS.ClientCAFile},
		{"upstream.tls.ca_file", c.Upstream.TLS.CAFile},
		{"upstream.tls.cert_file", c.Upstream.TLS.CertFile},
	} {
		if f.name == "" {
			continue
		}
		data, err := os.ReadFile(f.name)
		if err != nil {
			continue
		}
		for _, cert := range pemCertificates(data) {
			left := cert.NotAfter.Sub(now)
			subject := strconv.Quote(cert.Subject.String())
			switch {
			case left <= 0:
				w = append(w, fmt.Sprintf("%s: the certificate %s in %s expired on %s: TLS handshakes with it fail; renew it and reload (SIGHUP)",
					f.path, subject, strconv.Quote(f.name), cert.NotAfter.UTC().Format(time.RFC3339)))
			case left < CertExpirySoon:
				w = append(w, fmt.Sprintf("%s: the certificate %s in %s expires on %s, in %d days: renew it and reload (SIGHUP)",
					f.path, subject, strconv.Quote(f.name), cert.NotAfter.UTC().Format(time.RFC3339), int(left.Hours()/24)))
			}
		}
	}
	return w
}

// pemCertificates parses every CERTIFICATE block of data; blocks that do
// not parse are skipped.
func pemCertificates(data []byte) []*x509.Certificate {
	var out []*x509.Certificate
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return out
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		if cert, err := x509.ParseCertificate(b.Bytes); err == nil {
			out = append(out, cert)
		}
	}
}

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
