package proxy

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockproxy/lockproxy/admin"
	"github.com/lockproxy/lockproxy/clients"
	"github.com/lockproxy/lockproxy/commands"
	"github.com/lockproxy/lockproxy/telemetry"
)

// ops is the proxy's operational state: the counters the proxy increments
// (plain atomics, some on every command's path) which numbers.go reads for
// package telemetry's counter table, the admin commands (with their logins
// and the running configuration) and the writer of the log and audit file.
// The client and dedicated-connection counts are in Proxy.stats.
type ops struct {
	started time.Time

	// admin answers LOCKPROXY's subcommands and keeps the admin logins
	// and the configuration in force (adminhost.go).
	admin *admin.Admin
	// authLimit counts failed LOCKPROXY AUTH per client address.
	authLimit *clients.AuthLimiter

	// Dials of shared upstream connections, by result.
	dials, dialErrors atomic.Int64
	// upFailedCmds: commands whose connection to Valkey failed before
	// their reply came (answered with an UPSTREAM error).
	upFailedCmds atomic.Int64

	// Commands handled, and the round trip to Valkey of those sent there,
	// by family (package commands).
	commands  [commands.NumFamilies]atomic.Int64
	roundTrip telemetry.RoundTrips
	// perCmd: commands, error replies and client-seen latency by command
	// label (commands.LabelOf; cmdstats.go); slow: the slow log.
	perCmd *telemetry.CommandStats
	slow   *telemetry.SlowLog
	// certs: when each certificate in use expires (tlsconfig.go).
	certs atomic.Pointer[[]telemetry.Count]

	// Lock counters by rule and in total, and the owners waiting to
	// acquire (lockhost.go).
	locks telemetry.LockStats

	traffic telemetry.Traffic
	logs    telemetry.LogCounts

	// reloadMu lets one Reload run at a time.
	reloadMu sync.Mutex

	// writer logs events and appends them to the audit file, off the
	// reply path.
	writer *telemetry.Writer
}

func newOps(opts *Options) (*ops, error) {
	o := &ops{started: time.Now(), authLimit: clients.NewAuthLimiter()}
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
	o.perCmd = telemetry.NewCommandStats(commands.NumLabels)
	o.slow = telemetry.NewSlowLog(opts.Logger, opts.Slowlog.ThresholdOrDefault(), opts.Slowlog.MaxLen)
	return o, nil
}

func (o *ops) close() {
	o.writer.Close()
	o.slow.Close()
}

// sessionEnded forgets a session's admin login and its dedicated connection.
// It runs on the session's goroutine after serve returned.
func (p *Proxy) sessionEnded(s *session) {
	p.ops.admin.Logout(s.id)
	if s.ded != nil {
		p.stats.dedicated.Add(-1)
	}
}
