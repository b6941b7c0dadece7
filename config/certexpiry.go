package config

import (
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
