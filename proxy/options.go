package proxy

import (
	"crypto/tls"
	"log/slog"
	"time"

	"github.com/lockproxy/lockproxy/policy"
	"github.com/lockproxy/lockproxy/resp"
)

// Options configure a Proxy. The zero value of every field is a sensible
// default, except Upstream, which is required.
type Options struct {
	// Upstream is the Valkey address, host:port.
	Upstream string
	// Username and Password are the ACL user the proxy's shared upstream
	// connections log in as. A client that sends AUTH with exactly these
	// credentials keeps using the shared connections; any other AUTH moves the
	// client to a dedicated connection logged in as the user it named.
	Username, Password string
	// DB is the database shared connections start in (SELECT).
	DB int
	// PoolSize is how many shared upstream connections to open for each
	// (protocol, database) pair in use. Default 2.
	PoolSize int
	// DialTimeout bounds connecting to Valkey and its handshake. Default 5s.
	DialTimeout time.Duration
	// ReconnectBackoff is how long a shared connection slot that failed to
	// dial answers errors at once before trying again; it doubles on each
	// failure up to MaxBackoff. Defaults 100ms and 5s.
	ReconnectBackoff, MaxBackoff time.Duration
	// UpstreamTLS, when non-nil, is used to dial Valkey over TLS.
	UpstreamTLS *tls.Config

	// Limits bound what one client may send (Valkey's proto-max-bulk-len,
	// client-query-buffer-limit). Default resp.DefaultLimits().
	Limits resp.Limits
	// MaxClients is the number of client connections served at once; one
	// more is answered like Valkey does and closed. Default 10000.
	MaxClients int
	// OutputBufferLimit is how many reply bytes may wait for a client that does
	// not read before the proxy disconnects it (Valkey's
	// client-output-buffer-limit). It protects every other client sharing the
	// same upstream connection. Default 256 MiB.
	OutputBufferLimit int64
	// MaxPipeline is how many commands of one client may be in flight; past
	// it the proxy stops reading from that client until replies come back.
	// Default 100000.
	MaxPipeline int

	// Logger receives operational events. Default slog.Default().
	Logger *slog.Logger

	// Rules are the lock rules; nil or empty makes the proxy a pure
	// pass-through.
	Rules *policy.Rules
	// OnFlush says whether FLUSHALL/FLUSHDB pass while lock rules exist.
	OnFlush policy.FlushPolicy
	// MaxGrants caps the grant records kept (default 100000): past it new
	// grants are not recorded, and their holders' releases are refused as
	// from an unknown owner, which fails closed.
	MaxGrants int
	// KeepLapsed is how long a grant's record outlives its lease (default
	// 10m), so that the old holder's late release runs token-checked and
	// answers 0 rather than being refused.
	KeepLapsed time.Duration
	// EventRing is how many lock events are kept for audit (default 1024).
	EventRing int
}

func (o *Options) setDefaults() {
	if o.PoolSize <= 0 {
		o.PoolSize = 2
	}
	if o.DialTimeout <= 0 {
		o.DialTimeout = 5 * time.Second
	}
	if o.ReconnectBackoff <= 0 {
		o.ReconnectBackoff = 100 * time.Millisecond
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = 5 * time.Second
	}
	if o.Limits == (resp.Limits{}) {
		o.Limits = resp.DefaultLimits()
	}
	if o.MaxClients <= 0 {
		o.MaxClients = 10000
	}
	if o.OutputBufferLimit <= 0 {
		o.OutputBufferLimit = 256 << 20
	}
	if o.MaxPipeline <= 0 {
		o.MaxPipeline = 100000
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.MaxGrants <= 0 {
		o.MaxGrants = 100000
	}
	if o.KeepLapsed <= 0 {
		o.KeepLapsed = 10 * time.Minute
	}
	if o.EventRing <= 0 {
		o.EventRing = 1024
	}
}
