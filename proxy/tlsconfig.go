package proxy

import (
	"crypto/tls"

	"github.com/lockproxy/lockproxy/config"
	"github.com/lockproxy/lockproxy/telemetry"
)

// The TLS configurations in use, both sides: built from the files by
// package config (UpstreamConfig.TLSConfig, ListenerTLS.TLSConfig), swapped
// here when a reload reads them again.

// upstreamTLS is the TLS configuration for Valkey now; nil for plaintext.
func (p *Proxy) upstreamTLS() *tls.Config { return p.upTLS.Load() }

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
		if up, err = p.opts.Upstream.TLSConfig(); err != nil {
			return err
		}
	}
	if p.opts.TLS.Enabled() {
		if lis, err = p.opts.TLS.TLSConfig(); err != nil {
			return err
		}
	}
	if up != nil {
		p.upTLS.Store(up)
	}
	if lis != nil {
		p.lisTLS.Store(lis)
	}
	p.noteExpiries()
	return nil
}

// noteExpiries reads when each certificate in use expires, for
// lockproxy_certificate_not_after_timestamp_seconds: the certificates the
// two sides present (their leaf) and the first of each CA file to expire.
// A CA file that cannot be read again keeps no sample: the files were
// just read to build the configurations.
func (p *Proxy) noteExpiries() {
	var out []telemetry.Count
	leaf := func(name string, c *tls.Config) {
		if t, ok := config.LeafNotAfter(c); ok {
			out = append(out, telemetry.Count{Label: name, N: t.Unix()})
		}
	}
	file := func(name, path string) {
		if path == "" {
			return
		}
		if t, err := config.FileNotAfter(path); err == nil {
			out = append(out, telemetry.Count{Label: name, N: t.Unix()})
		}
	}
	if lis := p.lisTLS.Load(); lis != nil {
		leaf("client-listener", lis)
		file("client-ca", p.opts.TLS.ClientCAFile)
	}
	if up := p.upstreamTLS(); up != nil {
		leaf("upstream-client", up)
		if !p.tlsGiven {
			file("upstream-ca", p.opts.Upstream.TLS.CAFile)
		}
	}
	p.ops.certs.Store(&out)
}
