package proxy

import (
	"errors"
	"log/slog"
	"strings"

	"github.com/lockproxy/lockproxy/admin"
	"github.com/lockproxy/lockproxy/config"
	"github.com/lockproxy/lockproxy/rewrite"
)

// ReloadResult says what a successful reload did (package admin's, which
// records it).
type ReloadResult = admin.ReloadResult

// Reload reads the configuration file again and, when it is valid, applies
// its lock rules, on_flush, admin_commands, admin.password and admin.users (and log.level
// when the logger's level is a LevelVar) to the next command of every
// connection; no
// connection is dropped. On any error the running configuration stays and the
// error names the file and line. Settings that only a restart can change are
// listed in the result and logged.
func (p *Proxy) Reload() (ReloadResult, error) {
	o := p.ops
	o.reloadMu.Lock()
	defer o.reloadMu.Unlock()
	path := p.opts.ConfigPath
	res := ReloadResult{File: path}
	fail := func(err error) (ReloadResult, error) {
		o.admin.Running.Failed(err)
		p.log.Error("configuration reload failed; the running configuration stays", "file", path, "err", admin.OneLine(err))
		return res, err
	}
	if path == "" {
		return fail(errors.New("no configuration file to reload: lockproxy was started without --config"))
	}
	cfg, err := config.Load(path)
	if err != nil {
		return fail(err)
	}
	if p.opts.ConfigOverride != nil {
		p.opts.ConfigOverride(cfg)
	}
	rules, err := cfg.Rules()
	if err != nil {
		return fail(err)
	}
	// Renewed certificates, at the running configuration's paths.
	if err := p.loadCertificates(); err != nil {
		return fail(err)
	}

	// Swap the rules, keeping the command table. tableMu keeps loadTable
	// from storing a decider built from the old rules over this one.
	p.tableMu.Lock()
	nd := *p.decider.Load()
	wasActive := nd.Active()
	nd.Rules, nd.OnFlush = rules, cfg.OnFlush
	nd.Gate = cfg.AdminCommands != config.AdminCommandsForward
	p.adminCmds.Store(adminCmdsCode(cfg.AdminCommands))
	if p.opts.KeepLapsed == p.opts.Config.KeepLapsed.D() { // not overridden by Options
		nd.Keep = rewrite.KeepArg(cfg.KeepLapsed.D())
	}
	p.decider.Store(&nd)
	p.tableMu.Unlock()
	if !wasActive && nd.Active() && p.cl == nil {
		// Connections opened without rules learned no run id
		// (epoch.go): they are reopened before they mint a token.
		p.reopenShared(errRulesOn)
	}

	o.admin.SetLogins(cfg.Admin.Password, cfg.Admin.Users)
	o.slow.Set(cfg.Slowlog.ThresholdOrDefault(), cfg.Slowlog.MaxLen)
	if p.opts.LogLevel != nil {
		var l slog.Level
		if l.UnmarshalText([]byte(cfg.Log.Level)) == nil {
			p.opts.LogLevel.Set(l)
		}
	}
	res.Rules = rules.Len()
	res.Restart = o.admin.Running.Applied(cfg, p.opts.LogLevel != nil)
	if len(res.Restart) > 0 {
		p.log.Warn("configuration reloaded; some changes need a restart and keep their running values",
			"file", path, "lock_rules", res.Rules, "restart_needed", strings.Join(res.Restart, " "))
	} else {
		p.log.Info("configuration reloaded", "file", path, "lock_rules", res.Rules)
	}
	return res, nil
}
