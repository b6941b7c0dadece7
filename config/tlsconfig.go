package config

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
)

// The TLS configurations the settings describe, built from the files they
// name: read again at every call, so a reload picks up renewed
// certificates (the proxy keeps the one in use and swaps it).

// TLSConfig is the TLS configuration for Valkey from the upstream
// section's settings and files (whether TLS is on is u.TLS.Enabled's).
func (u UpstreamConfig) TLSConfig() (*tls.Config, error) {
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

// TLSConfig is the client listener's TLS configuration from the tls
// section's files: the proxy's certificate, and client certificates
// required when a client CA is set.
func (t ListenerTLS) TLSConfig() (*tls.Config, error) {
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
