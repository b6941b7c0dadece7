package e2e_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/lockproxy/lockproxy/config"
	"github.com/lockproxy/lockproxy/proxy"
)

// get asks the proxy's metrics endpoint for path, with basic credentials
// unless user is noLogin, and returns the status and body.
func get(t *testing.T, url, path, user, pass string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if user != noLogin {
		req.SetBasicAuth(user, pass)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, string(body)
}

const (
	noLogin        = "\x00none"
	upstreamSecret = "up-secret-4711"
	adminSecret    = "adm-secret-0815"
	viewerSecret   = "view-secret-1234"
)

func adminHTTPOptions(pprof bool) proxy.Options {
	return proxy.Options{Config: config.Config{
		Upstream: config.UpstreamConfig{Password: upstreamSecret},
		Admin: config.AdminConfig{Password: adminSecret, Users: []config.AdminUser{
			{Name: "viewer", Password: viewerSecret, Role: config.AdminRead},
			{Name: "hashed", PasswordSHA256: strings.Repeat("ab", 32), Role: config.AdminOperate},
		}},
		Metrics: config.MetricsConfig{Pprof: pprof},
	}}
}

// /config is the configuration in force behind the admin credentials, with
// every secret redacted.
func TestConfigPageRedactsAndNeedsCredentials(t *testing.T) {
	e := newEnv(t, adminHTTPOptions(false), "requirepass "+upstreamSecret)
	srv := httptest.NewServer(e.p.MetricsHandler())
	defer srv.Close()

	code, body := get(t, srv.URL, "/config", noLogin, "")
	eq(t, code, http.StatusUnauthorized)
	mustContain(t, body, "NOAUTH /config needs HTTP basic credentials")
	code, body = get(t, srv.URL, "/config", "viewer", "wrong")
	eq(t, code, http.StatusUnauthorized)
	mustContain(t, body, "WRONGPASS")

	for _, login := range [][2]string{{"viewer", viewerSecret}, {"default", adminSecret}, {"", adminSecret}} {
		code, body = get(t, srv.URL, "/config", login[0], login[1])
		if code != http.StatusOK {
			t.Fatalf("as %q: %d %s", login[0], code, body)
		}
		for _, secret := range []string{upstreamSecret, adminSecret, viewerSecret, strings.Repeat("ab", 32)} {
			if strings.Contains(body, secret) {
				t.Errorf("/config shows the secret %q:\n%s", secret, body)
			}
		}
		for _, line := range []string{"upstream.password: (redacted)", "admin.password: (redacted)",
			"admin.users[0].name: viewer", "admin.users[0].password: (redacted)", "admin.users[1].password_sha256: (redacted)",
			"upstream.addr: " + e.srv.Addr, "slowlog.threshold: 100ms", "metrics.pprof: false"} {
			mustContain(t, body, line+"\n")
		}
	}
	// The failed attempt counts as a failed admin login.
	if n := metric(t, metrics(t, e), "lockproxy_admin_auth_failures_total"); n != 1 {
		t.Errorf("admin_auth_failures_total = %v, want 1", n)
	}
}

// With no admin credentials configured, /config is refused: fail closed.
func TestConfigPageWithoutCredentialsRefused(t *testing.T) {
	e := newEnv(t, proxy.Options{})
	srv := httptest.NewServer(e.p.MetricsHandler())
	defer srv.Close()
	code, body := get(t, srv.URL, "/config", "default", "anything")
	eq(t, code, http.StatusForbidden)
	mustContain(t, body, "NOAUTH /config needs an admin login, and none is configured")
}

// /debug/pprof is off by default (404), and on with metrics.pprof, behind
// the admin credentials.
func TestPprofOffByDefaultAndGuarded(t *testing.T) {
	off := newEnv(t, adminHTTPOptions(false), "requirepass "+upstreamSecret)
	srv := httptest.NewServer(off.p.MetricsHandler())
	defer srv.Close()
	code, _ := get(t, srv.URL, "/debug/pprof/", "viewer", viewerSecret)
	eq(t, code, http.StatusNotFound)
	code, _ = get(t, srv.URL, "/debug/pprof/goroutine?debug=1", "viewer", viewerSecret)
	eq(t, code, http.StatusNotFound)

	on := newEnv(t, adminHTTPOptions(true), "requirepass "+upstreamSecret)
	srv2 := httptest.NewServer(on.p.MetricsHandler())
	defer srv2.Close()
	code, body := get(t, srv2.URL, "/debug/pprof/goroutine?debug=1", noLogin, "")
	eq(t, code, http.StatusUnauthorized)
	mustContain(t, body, "NOAUTH /debug/pprof")
	code, body = get(t, srv2.URL, "/debug/pprof/goroutine?debug=1", "viewer", viewerSecret)
	eq(t, code, http.StatusOK)
	mustContain(t, body, "goroutine profile:")
	code, body = get(t, srv2.URL, "/debug/pprof/", "default", adminSecret)
	eq(t, code, http.StatusOK)
	mustContain(t, body, "heap")
}
