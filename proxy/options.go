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
	// EventLoops is how many event loops read clients (eventloop_linux.go).
	// 0 means the default, one; a negative value gives every client a
	// goroutine of its own instead, as TLS clients always have.
	EventLoops int
	// BusyPoll is how long an event loop keeps polling for work after a
	// round before it sleeps; 0 sleeps at once. On a virtual machine whose
	// idle CPUs halt, every sleep and wake-up of the loop's thread costs
	// tens of microseconds; polling for about one Valkey round trip (50us)
	// catches the reply awake, at the price of CPU spent polling.
	BusyPoll time.Duration

	// Logger receives operational events. Default slog.Default().
	Logger *slog.Logger

	// Rules are the lock rules; nil or empty makes the proxy a pure
	// pass-through.
	Rules *policy.Rules
	// OnFlush says whether FLUSHALL/FLUSHDB pass while lock rules exist.
	OnFlush policy.FlushPolicy
	// KeepLapsed is how long an owner record, kept in Valkey beside its
	// lock, outlives the lock's lease (default 10m), so that the old
	// holder's late release runs token-checked and answers 0 rather than
	// being refused as a stranger's.
	KeepLapsed time.Duration
	// EventRing is how many lock events are kept for audit (default 1024).
	EventRing int

	// ReplyTimeout bounds the wait for a reply to a non-blocking command
	// (default 30s). When it passes, the upstream connection is taken as
	// hung: every command waiting on it gets an error and it is replaced.
	// Blocking commands (BLPOP, WAIT, XREAD BLOCK, SUBSCRIBE ...) wait as
	// long as they asked.
	ReplyTimeout time.Duration
	// ClientIdleTimeout closes a client that sent nothing and waits for
	// nothing for this long (Valkey's timeout); 0 never does.
	ClientIdleTimeout time.Duration
	// Sentinel, when Master is set, finds the primary through Valkey
	// Sentinel (Upstream is then only a fallback) and follows failovers.
	Sentinel SentinelOptions

	// AdminPassword, when set, is what LOCKPROXY AUTH must be given before
	// any LOCKPROXY subcommand but HELP and AUTH (admin.password).
	AdminPassword string
	// AdminUsers are named admin logins (admin.users): LOCKPROXY AUTH
	// <name> <password>, each with a role. AdminPassword, when also set, is
	// one more user, "default", with role operate. With users set, INFO
	// lockproxy needs a login too.
	AdminUsers []policy.AdminUser
	// AdminOpenRead opens the read-only LOCKPROXY subcommands (AUDIT, LOCKS,
	// STATS, SESSIONS, CHECK, FENCE, and INFO lockproxy) to every client even
	// when AdminPassword or AdminUsers is set; CONFIG and RELOAD still need
	// LOCKPROXY AUTH.
	AdminOpenRead bool
	// ConfigPath is the configuration file LOCKPROXY RELOAD and
	// [Proxy.Reload] read again; empty = reload is not available.
	ConfigPath string
	// Config is the configuration the proxy was built from, for LOCKPROXY
	// CONFIG and for telling which changes a reload cannot apply. Nil: one is
	// made up from these options.
	Config *policy.Config
	// ConfigOverride, when set, is applied to every configuration reload
	// reads, before it is compared and applied (the command line's
	// --listen and --upstream, which override the file).
	ConfigOverride func(*policy.Config)
	// LogLevel, when set, is the logger's level: a reload that changes
	// log.level sets it. Nil: a change of log.level needs a restart.
	LogLevel *slog.LevelVar
	// Version is reported by INFO lockproxy and /metrics.
	Version string
	// AuditFile, when set, receives every lock event as a JSON line.
	// When it would pass AuditFileMaxBytes (default 64 MiB) it is renamed
	// FILE.1 (FILE.1 to FILE.2, ...), keeping AuditFileKeep old files
	// (default 5).
	AuditFile         string
	AuditFileMaxBytes int64
	AuditFileKeep     int
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
	if o.EventLoops == 0 {
		o.EventLoops = 1
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.KeepLapsed <= 0 {
		o.KeepLapsed = 10 * time.Minute
	}
	if o.EventRing <= 0 {
		o.EventRing = 1024
	}
	if o.ReplyTimeout <= 0 {
		o.ReplyTimeout = 30 * time.Second
	}
}

// SentinelOptions name a master monitored by Valkey Sentinel.
type SentinelOptions struct {
	Master             string
	Addrs              []string
	Username, Password string
}
