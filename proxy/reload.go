package proxy

import (
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/lockproxy/lockproxy/config"
	"github.com/lockproxy/lockproxy/rewrite"
)

// ReloadResult says what a successful reload did.
type ReloadResult struct {
	File  string
	Rules int // lock rules now in force
	// Restart lists the settings that differ from the running process but
	// cannot change without a restart (listen, upstream.*, tls.*, metrics.*,
	// limits ...), by their config path. They keep their running values.
	Restart []string
}

// Settings a reload applies at once; every other change needs a restart.
func liveSetting(key string, logLevelLive bool) bool {
	switch {
	case key == "locks" || strings.HasPrefix(key, "locks["), key == "on_flush", key == "keep_lapsed", key == "admin.password",
		strings.HasPrefix(key, "admin.users["):
		return true
	case key == "log.level":
		return logLevelLive
	}
	return false
}

// initConfig records the configuration the proxy started with.
func (p *Proxy) initConfig() {
	o := p.ops
	cfg := p.opts.Config
	o.boot = &cfg
	o.current.Store(&cfg)
	none := []string{}
	o.pendingRestart.Store(&none)
}

// Reload reads the configuration file again and, when it is valid, applies
// its lock rules, on_flush, admin.password and admin.users (and log.level
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
		o.reloadErrors.Add(1)
		o.lastReload.Store(&reloadStatus{at: time.Now(), err: oneLine(err)})
		p.log.Error("configuration reload failed; the running configuration stays", "file", path, "err", oneLine(err))
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

	if !o.logins.Load().same(cfg.Admin.Password, cfg.Admin.Users) {
		o.logins.Store(newAdminLogins(cfg.Admin.Password, cfg.Admin.Users))
		// New credentials log every admin session out.
		o.authed.Range(func(k, _ any) bool { o.authed.Delete(k); return true })
	}
	if p.opts.LogLevel != nil {
		var l slog.Level
		if l.UnmarshalText([]byte(cfg.Log.Level)) == nil {
			p.opts.LogLevel.Set(l)
		}
	}
	o.current.Store(cfg)
	res.Rules = rules.Len()
	res.Restart = restartNeeded(o.boot, cfg, p.opts.LogLevel != nil)
	o.pendingRestart.Store(&res.Restart)
	o.reloads.Add(1)
	o.lastReload.Store(&reloadStatus{at: time.Now()})
	if len(res.Restart) > 0 {
		p.log.Warn("configuration reloaded; some changes need a restart and keep their running values",
			"file", path, "lock_rules", res.Rules, "restart_needed", strings.Join(res.Restart, " "))
	} else {
		p.log.Info("configuration reloaded", "file", path, "lock_rules", res.Rules)
	}
	return res, nil
}

// oneLine joins a multi-line error (every problem of a config file) with
// "; ", for an error reply or a log attribute.
func oneLine(err error) string {
	return strings.Join(strings.Split(strings.TrimSpace(err.Error()), "\n"), "; ")
}

// restartNeeded lists the settings that differ between the running and the
// new configuration and cannot change live.
func restartNeeded(running, next *config.Config, logLevelLive bool) []string {
	a := map[string]string{}
	for _, f := range configFields(running, false) {
		a[f.k] = f.v.(string)
	}
	out := []string{}
	seen := map[string]bool{}
	for _, f := range configFields(next, false) {
		seen[f.k] = true
		if a[f.k] != f.v.(string) && !liveSetting(f.k, logLevelLive) {
			out = append(out, f.k)
		}
	}
	for _, f := range configFields(running, false) {
		if !seen[f.k] && !liveSetting(f.k, logLevelLive) {
			out = append(out, f.k)
		}
	}
	return out
}

// effectiveConfig is what runs now: the process's start-up settings with
// what reloads applied live.
func (p *Proxy) effectiveConfig() *config.Config {
	o := p.ops
	cur := o.current.Load()
	eff := *o.boot
	eff.Locks, eff.OnFlush, eff.Admin = cur.Locks, cur.OnFlush, cur.Admin
	if p.opts.LogLevel != nil {
		eff.Log.Level = cur.Log.Level
	}
	return &eff
}

// configFields flattens a configuration into (path, value) pairs in file
// order: "upstream.addr", "locks[0].pattern", ... Values are strings; sizes
// and durations as the file writes them. With redact, every non-empty
// secret reads "(redacted)".
func configFields(c *config.Config, redact bool) []field {
	if redact {
		c = c.Redacted()
	}
	var out []field
	flattenValue("", reflect.ValueOf(c).Elem(), redact, &out)
	return out
}

var stringer = reflect.TypeFor[fmt.Stringer]()

func flattenValue(path string, v reflect.Value, redact bool, out *[]field) {
	if v.Type().Implements(stringer) && v.Kind() != reflect.Pointer && v.Kind() != reflect.Struct {
		*out = append(*out, field{path, v.Interface().(fmt.Stringer).String()})
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			flattenValue(path, v.Elem(), redact, out)
		}
	case reflect.Struct:
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			sf := t.Field(i)
			name, _, _ := strings.Cut(sf.Tag.Get("yaml"), ",")
			if !sf.IsExported() || name == "" || name == "-" {
				continue
			}
			if path != "" {
				name = path + "." + name
			}
			fv := v.Field(i)
			if redact && fv.Kind() == reflect.String && fv.String() != "" && secretName(sf.Name) {
				*out = append(*out, field{name, config.Redacted})
				continue
			}
			flattenValue(name, fv, redact, out)
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Struct {
			for i := 0; i < v.Len(); i++ {
				flattenValue(fmt.Sprintf("%s[%d]", path, i), v.Index(i), redact, out)
			}
			return
		}
		parts := make([]string, v.Len())
		for i := range parts {
			var one []field
			flattenValue("", v.Index(i), redact, &one)
			if len(one) == 1 {
				parts[i] = one[0].v.(string)
			}
		}
		*out = append(*out, field{path, strings.Join(parts, " ")})
	case reflect.String:
		*out = append(*out, field{path, v.String()})
	case reflect.Bool:
		*out = append(*out, field{path, strconv.FormatBool(v.Bool())})
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		*out = append(*out, field{path, strconv.FormatInt(v.Int(), 10)})
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		*out = append(*out, field{path, strconv.FormatUint(v.Uint(), 10)})
	case reflect.Float32, reflect.Float64:
		*out = append(*out, field{path, strconv.FormatFloat(v.Float(), 'g', -1, 64)})
	}
}

// secretName: a field holding a secret, redacted even if Redacted does not
// know it yet.
func secretName(name string) bool {
	n := strings.ToLower(name)
	return strings.Contains(n, "password") || strings.Contains(n, "secret") || strings.Contains(n, "token")
}
