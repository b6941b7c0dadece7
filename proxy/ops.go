package proxy

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockproxy/lockproxy/clients"
	"github.com/lockproxy/lockproxy/config"
	"github.com/lockproxy/lockproxy/telemetry"
	"github.com/lockproxy/lockproxy/upstream"
)

// ops is the proxy's operational state: what the LOCKPROXY commands, INFO
// lockproxy and /metrics report beyond the core counters in stats, the admin
// logins, the running configuration and the audit file. Everything here is
// read far more often than it is written, and none of it is on the path of a
// command that touches no lock.
type ops struct {
	started time.Time

	// logins are the admin credentials in force; swapped on reload.
	logins    atomic.Pointer[adminLogins]
	authed    sync.Map // *session → adminLogin: sessions that gave LOCKPROXY AUTH
	authLimit *clients.AuthLimiter

	authFailures atomic.Int64
	authLimited  atomic.Int64 // AUTH attempts refused by the failure limit

	// Dials of shared upstream connections, by result.
	dials, dialErrors atomic.Int64
	// Failed dials and lost connections to Valkey, by reason (uphealth.go's
	// upstreamReasons, in order).
	upErrors [len(upstream.Reasons)]atomic.Int64
	// upFailedCmds: commands whose connection to Valkey failed before
	// their reply came (answered with an UPSTREAM error).
	upFailedCmds atomic.Int64

	// Commands handled, and the round trip to Valkey of those sent there,
	// by family (commands.go).
	commands  [numFamilies]atomic.Int64
	roundTrip roundTrips

	// Per-rule counters, by the rule's pattern (so they survive a reload
	// that keeps the pattern), and totals across rules.
	rules telemetry.RuleSet
	all   telemetry.RuleStats

	// First contention of each (owner, key) still waiting to acquire.
	waitMu sync.Mutex
	waits  map[waitKey]time.Time
	// waitSwept is when a full waits table was last swept: at most once a
	// second, so a flood of contended acquisitions does not sweep it each.
	waitSwept time.Time

	traffic telemetry.Traffic
	logs    telemetry.LogCounts

	// Configuration, for CONFIG and RELOAD.
	reloadMu       sync.Mutex
	boot           *config.Config                // as the process started: listener/upstream settings
	current        atomic.Pointer[config.Config] // as last loaded
	reloads        atomic.Int64
	reloadErrors   atomic.Int64
	lastReload     atomic.Pointer[reloadStatus]
	pendingRestart atomic.Pointer[[]string]

	// writer logs events and appends them to the audit file, off the
	// reply path.
	writer *telemetry.Writer
}

type reloadStatus struct {
	at  time.Time
	err string
}

func newOps(opts *Options) (*ops, error) {
	o := &ops{started: time.Now(), waits: map[waitKey]time.Time{}, authLimit: clients.NewAuthLimiter()}
	o.logins.Store(newAdminLogins(opts.Admin.Password, opts.Admin.Users))
	opts.Logger = slog.New(o.logs.Handler(opts.Logger.Handler()))
	var audit *telemetry.AuditFile
	if opts.Log.AuditFile != "" {
		a, err := telemetry.OpenAudit(opts.Log.AuditFile, int64(opts.Log.AuditMaxSize), opts.Log.AuditKeep)
		if err != nil {
			return nil, err
		}
		audit = a
	}
	o.writer = telemetry.NewWriter(opts.Logger, audit)
	return o, nil
}

func (o *ops) close() { o.writer.Close() }

// sessionEnded forgets a session's admin login and its dedicated connection.
// It runs on the session's goroutine after serve returned.
func (p *Proxy) sessionEnded(s *session) {
	p.ops.authed.Delete(s)
	if s.ded != nil {
		p.stats.dedicated.Add(-1)
	}
}

// upstreamConns counts the live shared upstream connections.
func (p *Proxy) upstreamConns() int64 {
	p.poolMu.Lock()
	pools := make([]*upstream.Pool, 0, len(p.pools))
	for _, pl := range p.pools {
		pools = append(pools, pl)
	}
	p.poolMu.Unlock()
	var n int64
	for _, pl := range pools {
		n += int64(pl.Live())
	}
	return n
}

// lapsedTotal is every release through this instance that came after its
// grant's lease ran out. (A lease that runs out with no release at all is
// Valkey's to expire: no instance sees it.)
func (p *Proxy) lapsedTotal() int64 { return p.ops.all.Lapsed.Load() }
