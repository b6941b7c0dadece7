package proxy

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"

	"github.com/lockproxy/lockproxy/config"
)

// upstreamTLS is the TLS configuration for Valkey now; nil for plaintext.
func (p *Proxy) upstreamTLS() *tls.Config { return p.upTLS.Load() }

// loadUpstreamTLS builds the TLS configuration for Valkey from the upstream
// section's files.
func loadUpstreamTLS(u config.UpstreamConfig) (*tls.Config, error) {
	tc := &tls.Config{
		MinVersion:         tls.VersionTLS12,
		ServerName:         u.TLS.ServerName,
		InsecureSkipVerify: u.TLS.InsecureSkipVerify, // #nosec G402 -- opt-in, for tests
	}
	if tc.ServerName == "" {
		host, _, _ := net.SplitHostPort(u.Addr)
		tc.ServerName = host
	}
	if u.TLS.CAFile != "" {
		pool, err := certPool(u.TLS.CAFile)
		if err != nil {
			return nil, err
		}
		tc.RootCAs = pool
	}
	if u.TLS.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(u.TLS.CertFile, u.TLS.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("upstream.tls.cert_file %s and key_file %s: %w", u.TLS.CertFile, u.TLS.KeyFile, err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}

// ListenerTLS is the client listener's TLS configuration (tls section):
// each handshake takes the certificate and client CA loaded last, so a
// reload (SIGHUP, LOCKPROXY RELOAD) that reads renewed files applies them to
// new clients without a restart. Nil when the listener is plaintext.
func (p *Proxy) ListenerTLS() *tls.Config {
	if p.lisTLS.Load() == nil {
		return nil
	}
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			return p.lisTLS.Load(), nil
		},
	}
}

// loadCertificates reads the TLS files of both sides (the running
// configuration's: a change of path needs a restart) and puts them in use
// for new connections; on an error the ones in use stay.
func (p *Proxy) loadCertificates() error {
	var up, lis *tls.Config
	var err error
	if p.opts.Upstream.TLS.Enabled && !p.tlsGiven {
		if up, err = loadUpstreamTLS(p.opts.Upstream); err != nil {
			return err
		}
	}
	if p.opts.TLS.Enabled() {
		if lis, err = loadListenerTLS(p.opts.TLS); err != nil {
			return err
		}
	}
	if up != nil {
		p.upTLS.Store(up)
	}
	if lis != nil {
		p.lisTLS.Store(lis)
	}
	return nil
}

// loadListenerTLS builds the client listener's TLS configuration from the tls
// section's files: the proxy's certificate, and client certificates
// required when a client CA is set.
func loadListenerTLS(t config.ListenerTLS) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("tls.cert_file %s and key_file %s: %w", t.CertFile, t.KeyFile, err)
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}
	if t.ClientCAFile != "" {
		pool, err := certPool(t.ClientCAFile)
		if err != nil {
			return nil, err
		}
		tc.ClientCAs = pool
		tc.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return tc, nil
}

func certPool(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s: no PEM certificates found", path)
	}
	return pool, nil
}
