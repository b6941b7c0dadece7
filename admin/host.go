package admin

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockproxy/lockproxy/cluster"
	"github.com/lockproxy/lockproxy/config"
	"github.com/lockproxy/lockproxy/policy"
	"github.com/lockproxy/lockproxy/rewrite"
	"github.com/lockproxy/lockproxy/telemetry"
	"github.com/redis/go-redis/v9"
)

// Host is what the admin commands need from the proxy: the one seam
// between them and the proxy's state. Its methods may be called from any
// goroutine; those that reach Valkey (LoadTable, the clients') may wait,
// and the proxy calls the commands that use them off its event loops.
type Host interface {
	// Decider is the lock rules and command table in force.
	Decider() *rewrite.Decider
	// LoadTable reads Valkey's command table when it is not read yet and
	// returns the decider in force then.
	LoadTable() *rewrite.Decider
	// NoTableText is the error text (the proxy's catalogue) for a command
	// that needs the table when it could not be read.
	NoTableText() string
	// Events are the newest n lock events keep accepts, newest first.
	Events(n int, keep func(*telemetry.Event) bool) []telemetry.Event
	// Stats are the counter table's lines, as LOCKPROXY STATS and INFO
	// lockproxy show them.
	Stats() []telemetry.Line
	// SlowLog is the slow log LOCKPROXY SLOWLOG reads.
	SlowLog() *telemetry.SlowLog
	// Sessions are the proxy's client connections now, by id.
	Sessions() []Session
	// Map is the cluster's slot map: nil outside a cluster, or before the
	// map is read.
	Map() *cluster.Map
	// Side is the client of the one Valkey that is not a cluster.
	Side() *redis.Client
	// NodeClient is a client of one cluster node, logged in as the proxy;
	// the caller closes it.
	NodeClient(addr string) *redis.Client
	// KeyClient is the client for the server that holds key (Side, or the
	// primary of its slot); done closes what was opened for it.
	KeyClient(key []byte) (c *redis.Client, done func())
	// Timeout bounds one round trip to Valkey (upstream.dial_timeout).
	Timeout() time.Duration
	// Reload reads the configuration file again and applies it.
	Reload() (ReloadResult, error)
}

// Conn is the client connection that sent an admin command.
type Conn interface {
	ID() uint64
	DB() int
	Proto() int
	Addr() string
	// Host is the client's IP: failed logins are counted per host.
	Host() string
	Name() string
	// Owner is the connection's owner identity under r's session scope.
	Owner(r *policy.Rule) string
	// FoundMissing is told that Valkey holds no owner record of the
	// connection for the lock key it may think it holds.
	FoundMissing(key string)
}

// Session is one client connection, as SESSIONS lists it and LOCKS names a
// holder.
type Session struct {
	ID               uint64
	Addr, Host, Name string
	// Owner is the connection's owner identity under session: connection,
	// UserOwner under session: user ("" when unknown).
	Owner, UserOwner string
	// Since is when it connected; zero when unknown.
	Since time.Time
}

// Limiter bounds failed logins per client host.
type Limiter interface {
	// Blocked is how long host must wait before its next attempt is
	// checked; 0 when it may try now.
	Blocked(host string) time.Duration
	// Failed counts a failed attempt; true when it reached the limit.
	Failed(host string) bool
}

// Options are the settings that do not change while the proxy runs.
type Options struct {
	// Loopback: the proxy listens on loopback addresses only (Listen).
	Loopback bool
	Listen   string
	// OpenRead is admin.open_read.
	OpenRead bool
	// ConfigFile is the file Reload reads; "" when there is none.
	ConfigFile string
	// LogLevelLive: a reload sets log.level.
	LogLevelLive bool
	Log          *slog.Logger
	// Limiter, and the limit it keeps (for the error text): FailLimit
	// failed logins within FailWindow.
	Limiter    Limiter
	FailLimit  int
	FailWindow time.Duration
}

// Admin answers LOCKPROXY's subcommands for one proxy, and keeps the admin
// logins and the configuration in force.
type Admin struct {
	h Host
	o Options

	logins atomic.Pointer[Logins]
	authed sync.Map // connection id → login: connections that gave LOCKPROXY AUTH

	// indexScans: server and database → the SCAN cursor where indexOnce
	// stopped.
	indexScans sync.Map

	// Running is the configuration in force and its reloads.
	Running *Running

	// AuthFailures counts LOCKPROXY AUTH with a wrong user or password,
	// AuthLimited those refused unchecked by the Limiter.
	AuthFailures, AuthLimited atomic.Int64
}

// New returns the admin commands of a proxy that started with boot.
func New(h Host, o Options, boot config.Config) *Admin {
	a := &Admin{h: h, o: o, Running: NewRunning(boot)}
	a.logins.Store(NewLogins(boot.Admin.Password, boot.Admin.Users))
	return a
}
