package proxy

import (
	"crypto/tls"
	"log/slog"
	"time"

	"github.com/lockproxy/lockproxy/config"
)

// Options configure a Proxy: the configuration file's settings, as
// config.Config (embedded: what the file says is what the proxy runs with,
// field for field), and what a file cannot say. Zero values are the
// defaults of config.Default, except Upstream.Addr, which is required.
type Options struct {
	config.Config

	// Logger receives operational events. Default slog.Default().
	Logger *slog.Logger
	// LogLevel, when set, is the logger's level: a reload that changes
	// log.level sets it. Nil: a change of log.level needs a restart.
	LogLevel *slog.LevelVar
	// Version is reported by INFO lockproxy and /metrics.
	Version string
	// ConfigPath is the configuration file LOCKPROXY RELOAD and
	// [Proxy.Reload] read again; empty = reload is not available.
	ConfigPath string
	// ConfigOverride, when set, is applied to every configuration reload
	// reads, before it is compared and applied (the command line's
	// --listen and --upstream, which override the file).
	ConfigOverride func(*config.Config)

	// UpstreamTLS, when set, is the TLS configuration for Valkey, used
	// instead of one built from Upstream.TLS's files (for certificates
	// held in memory).
	UpstreamTLS *tls.Config

	// KeepLapsed, when set, overrides the configuration's keep_lapsed (how
	// long an owner record outlives its lock's lease), for tests that need
	// less than the file's granularity allows.
	KeepLapsed time.Duration
	// EventRing is how many lock events are kept for audit (default 1024).
	EventRing int
}

// setDefaults fills what was left zero: the configuration's defaults, then
// the rest.
func (o *Options) setDefaults() {
	o.Config.ApplyDefaults()
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.KeepLapsed <= 0 {
		o.KeepLapsed = o.Config.KeepLapsed.D()
	}
	if o.EventRing <= 0 {
		o.EventRing = 1024
	}
}
