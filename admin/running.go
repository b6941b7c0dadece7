package admin

import (
	"strings"
	"sync/atomic"
	"time"

	"github.com/lockproxy/lockproxy/config"
	"github.com/lockproxy/lockproxy/resp"
)

// Running is the configuration in force and the record of reloads, for
// LOCKPROXY CONFIG, the counters and Reload. The proxy applies a reload
// (its rules, logins and log level are its own); Running keeps what came
// of it.
type Running struct {
	boot    *config.Config // as the process started: listener/upstream settings
	current atomic.Pointer[config.Config]
	pending atomic.Pointer[[]string]
	last    atomic.Pointer[reloadStatus]

	// Reloads and Failures count reloads by result.
	Reloads, Failures atomic.Int64
}

type reloadStatus struct {
	at  time.Time
	err string
}

// NewRunning records the configuration the process started with.
func NewRunning(boot config.Config) *Running {
	r := &Running{boot: &boot}
	r.current.Store(&boot)
	none := []string{}
	r.pending.Store(&none)
	return r
}

// ReloadResult says what a successful reload did.
type ReloadResult struct {
	File  string
	Rules int // lock rules now in force
	// Restart lists the settings that differ from the running process but
	// cannot change without a restart (listen, upstream.*, tls.*, metrics.*,
	// limits ...), by their config path. They keep their running values.
	Restart []string
}

// Failed records a reload that kept the running configuration.
func (r *Running) Failed(err error) {
	r.Failures.Add(1)
	r.last.Store(&reloadStatus{at: time.Now(), err: OneLine(err)})
}

// Applied records cfg as the configuration last loaded and returns the
// settings in it that need a restart (RestartNeeded against the start-up
// configuration).
func (r *Running) Applied(cfg *config.Config, logLevelLive bool) []string {
	r.current.Store(cfg)
	restart := RestartNeeded(r.boot, cfg, logLevelLive)
	r.pending.Store(&restart)
	r.Reloads.Add(1)
	r.last.Store(&reloadStatus{at: time.Now()})
	return restart
}

// LastReload says whether a reload ran and, if the last one failed, why.
func (r *Running) LastReload() (ran bool, err string) {
	l := r.last.Load()
	if l == nil {
		return false, ""
	}
	return true, l.err
}

// PendingRestart is what the last reload found needs a restart.
func (r *Running) PendingRestart() []string { return *r.pending.Load() }

// Effective is what runs now: the process's start-up settings with what
// reloads applied live (log.level only when logLevelLive).
func (r *Running) Effective(logLevelLive bool) *config.Config {
	cur := r.current.Load()
	eff := *r.boot
	eff.Locks, eff.OnFlush, eff.AdminCommands, eff.Admin, eff.Slowlog = cur.Locks, cur.OnFlush, cur.AdminCommands, cur.Admin, cur.Slowlog
	if logLevelLive {
		eff.Log.Level = cur.Log.Level
	}
	return &eff
}

// CONFIG: the configuration in force, secrets redacted.
func (a *Admin) config(c Conn, _ [][]byte) []byte {
	f := []Field{{"config_file", a.o.ConfigFile}}
	f = append(f, ConfigFields(a.Running.Effective(a.o.LogLevelLive), true)...)
	if r := a.Running.PendingRestart(); len(r) > 0 {
		f = append(f, Field{"pending_restart", strings.Join(r, " ")})
	}
	return Encode(nil, f, c.Proto())
}

// RELOAD: the host's Reload, and what it did.
func (a *Admin) reload(c Conn, _ [][]byte) []byte {
	res, err := a.h.Reload()
	if err != nil {
		return resp.AppendError(nil, errReload(err))
	}
	return Encode(nil, []Field{
		{"status", "reloaded"},
		{"file", res.File},
		{"lock_rules", int64(res.Rules)},
		{"restart_needed", strings.Join(res.Restart, " ")},
	}, c.Proto())
}
