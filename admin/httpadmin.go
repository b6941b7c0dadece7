package admin

import (
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"strings"

	"github.com/lockproxy/lockproxy/config"
)

// The metrics endpoint's admin pages: /config (the configuration in force,
// secrets redacted, as LOCKPROXY CONFIG gives it) and, with metrics.pprof,
// /debug/pprof/ (Go's profiles). Both need HTTP basic credentials of an
// admin login (admin.password as user "default", or a user of
// admin.users, any role); failed attempts count against the same per-host
// limit as LOCKPROXY AUTH. With no admin credentials configured they are
// refused: fail closed, whatever address the endpoint listens on.

// guard serves h to a request that carries an admin login's credentials.
func (a *Admin) guard(what string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l := a.logins.Load()
		if l.Open() {
			http.Error(w, errHTTPNoCredentials(what), http.StatusForbidden)
			return
		}
		host, _, err := net.SplitHostPort(r.RemoteAddr)
		if err != nil {
			host = r.RemoteAddr
		}
		if wait := a.o.Limiter.Blocked(host); wait > 0 {
			a.AuthLimited.Add(1)
			http.Error(w, errAuthLimit(host, a.o.FailLimit, a.o.FailWindow, wait), http.StatusTooManyRequests)
			return
		}
		user, pass, ok := r.BasicAuth()
		if !ok {
			w.Header().Set("WWW-Authenticate", `Basic realm="lockproxy admin", charset="UTF-8"`)
			http.Error(w, errHTTPNoAuth(what), http.StatusUnauthorized)
			return
		}
		if user == "" {
			user = config.DefaultAdminUser
		}
		if _, ok := l.check(user, []byte(pass)); !ok {
			a.AuthFailures.Add(1)
			limited := a.o.Limiter.Failed(host)
			a.o.Log.Warn("wrong admin user or password on the metrics endpoint", "client", r.RemoteAddr,
				"path", r.URL.Path, "user", clip(user, 64), "limit_reached", limited)
			w.Header().Set("WWW-Authenticate", `Basic realm="lockproxy admin", charset="UTF-8"`)
			http.Error(w, errHTTPWrongPass(what), http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// configPage answers /config: the configuration in force, one "path:
// value" line per setting in file order, secrets redacted.
func (a *Admin) configPage(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	var b strings.Builder
	fmt.Fprintf(&b, "config_file: %s\n", a.o.ConfigFile)
	for _, f := range ConfigFields(a.Running.Effective(a.o.LogLevelLive), true) {
		fmt.Fprintf(&b, "%s: %v\n", f.K, f.V)
	}
	if r := a.Running.PendingRestart(); len(r) > 0 {
		fmt.Fprintf(&b, "pending_restart: %s\n", strings.Join(r, " "))
	}
	_, _ = w.Write([]byte(b.String()))
}

// adminPages adds /config and, with withPprof, /debug/pprof/ to mux.
func (a *Admin) adminPages(mux *http.ServeMux, withPprof bool) {
	mux.Handle("/config", a.guard("/config", http.HandlerFunc(a.configPage)))
	if !withPprof {
		return
	}
	mux.Handle("/debug/pprof/", a.guard("/debug/pprof", http.HandlerFunc(pprof.Index)))
	mux.Handle("/debug/pprof/cmdline", a.guard("/debug/pprof", http.HandlerFunc(pprof.Cmdline)))
	mux.Handle("/debug/pprof/profile", a.guard("/debug/pprof", http.HandlerFunc(pprof.Profile)))
	mux.Handle("/debug/pprof/symbol", a.guard("/debug/pprof", http.HandlerFunc(pprof.Symbol)))
	mux.Handle("/debug/pprof/trace", a.guard("/debug/pprof", http.HandlerFunc(pprof.Trace)))
}
