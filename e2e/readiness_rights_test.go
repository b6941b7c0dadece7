package e2e_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/lockproxy/lockproxy/config"
	"github.com/lockproxy/lockproxy/proxy"
)

// Readiness includes the rights of the upstream user: an ACL user that
// lacks one right lockproxy needs makes /readyz 503 naming the right, and
// lockproxy_upstream_up 0 with reason permission; the same user with every
// right is ready. On 9ae0d55 each such user was ready (200, upstream_up 1)
// and every lock command then failed with NOPERM.
func TestReadinessNamesAMissingRight(t *testing.T) {
	for _, tc := range []struct {
		right string // "" grants every right
		db    int
	}{
		{"", 3},
		{"+select", 3},
		{"+eval", 0},
		{"+evalsha", 0},
		{"+script|load", 0},
	} {
		t.Run("without"+tc.right, func(t *testing.T) {
			acl := "user lp on >pw ~* &* +@all"
			if tc.right != "" {
				acl += " -" + strings.TrimPrefix(tc.right, "+")
			}
			o := rulesOptions(t, "locks:\n  - pattern: \"*:lock\"\n", func(o *proxy.Options) {
				o.Upstream.Username, o.Upstream.Password, o.Upstream.DB = "lp", "pw", tc.db
				o.Upstream.ReplyTimeout = config.Duration(2 * time.Second)
			})
			e := newEnv(t, o, acl)
			hs := httptest.NewServer(e.p.MetricsHandler())
			defer hs.Close()
			hc := &http.Client{Timeout: 10 * time.Second}
			get := func(path string) (int, string) {
				res, err := hc.Get(hs.URL + path)
				if err != nil {
					t.Fatalf("%s: %v", path, err)
				}
				defer res.Body.Close()
				b, _ := io.ReadAll(res.Body)
				return res.StatusCode, string(b)
			}
			if tc.right == "" {
				waitFor(t, 10*time.Second, "/readyz 200", func() bool { code, _ := get("/readyz"); return code == 200 })
				_, m := get("/metrics")
				mustContain(t, m, `lockproxy_upstream_up{reason="ok"} 1`)
				return
			}
			var body string
			waitFor(t, 10*time.Second, "/readyz 503 naming "+tc.right, func() bool {
				var code int
				code, body = get("/readyz")
				return code == 503 && strings.Contains(body, "lacks "+tc.right+":")
			})
			mustContain(t, body, "permission: ")
			_, m := get("/metrics")
			mustContain(t, m, `lockproxy_upstream_up{reason="permission"} 0`)
		})
	}
}
