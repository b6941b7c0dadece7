package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockproxy/lockproxy/config"
	"github.com/lockproxy/lockproxy/proxy"
	"github.com/redis/go-redis/v9"
)

const abRules = "locks:\n  - pattern: \"*:lock\"\n    release: rewrite\n"

// abStory runs the seed's A/B story through the proxy: A acquires
// resource:lock with abc, its lease lapses, B acquires with xyz, A's blind
// DEL. A and B stay connected.
func abStory(t *testing.T, e *env) (a, b *raw) {
	t.Helper()
	a, b = dialRaw(t, e.addr), dialRaw(t, e.addr)
	eq(t, a.do("CLIENT", "SETNAME", "worker-a"), "+OK\r\n")
	eq(t, b.do("CLIENT", "SETNAME", "worker-b"), "+OK\r\n")
	eq(t, a.do("SET", "resource:lock", "abc", "NX", "PX", "100"), "+OK\r\n")
	time.Sleep(150 * time.Millisecond)
	eq(t, b.do("SET", "resource:lock", "xyz", "NX", "PX", "30000"), "+OK\r\n")
	eq(t, a.do("DEL", "resource:lock"), ":0\r\n") // token-checked: B's lock stands
	eq(t, b.do("GET", "resource:lock"), bulk("xyz"))
	return a, b
}

// The A/B story, then every read-only subcommand through go-redis in both
// protocols.
func TestAdminABStoryGoRedis(t *testing.T) {
	e := newEnv(t, rulesOptions(t, abRules))
	a, b := abStory(t, e)
	for _, protocol := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", protocol), func(t *testing.T) {
			c := e.client(func(o *redis.Options) { o.Protocol = protocol })

			// AUDIT: A's DEL found B's lock and deleted nothing.
			evs := recs(t, admin(t, c, "AUDIT"))
			eq(t, len(evs), 1)
			ev := evs[0]
			eq(t, ev["outcome"], "successor_deletion_prevented")
			eq(t, ev["command"], "DEL")
			eq(t, ev["key"], "resource:lock")
			eq(t, ev["rule"], "*:lock")
			eq(t, ev["client_name"], "worker-a")
			eq(t, ev["client"], a.nc.LocalAddr().String())
			eq(t, ev["grant"], "1")
			eq(t, ev["token"], "***(3 bytes)") // never the token itself
			if _, err := time.Parse(time.RFC3339, ev["time"]); err != nil {
				t.Fatalf("time %q: %v", ev["time"], err)
			}
			eq(t, len(recs(t, admin(t, c, "AUDIT", "OUTCOME", "refused"))), 0)
			eq(t, len(recs(t, admin(t, c, "AUDIT", "KEY", "other:*"))), 0)
			eq(t, len(recs(t, admin(t, c, "AUDIT", "COUNT", "5", "KEY", "resource:*", "OUTCOME", "successor_deletion_prevented"))), 1)
			err := c.Do(ctx, "LOCKPROXY", "AUDIT", "OUTCOME", "nope").Err()
			if err == nil || !strings.Contains(err.Error(), "unknown OUTCOME 'nope'; outcomes are: rewritten, refused") {
				t.Fatalf("bad outcome: %v", err)
			}

			// LOCKS: B's lock, with its TTL read from Valkey.
			locks := recs(t, admin(t, c, "LOCKS"))
			eq(t, len(locks), 1)
			l := locks[0]
			eq(t, l["key"], "resource:lock")
			eq(t, l["holder"], b.nc.LocalAddr().String())
			eq(t, l["client_name"], "worker-b")
			eq(t, l["grant"], "2")
			eq(t, l["lease_ms"], "30000")
			eq(t, l["current"], "yes")
			eq(t, l["token"], "***(3 bytes)")
			ttl, _ := strconv.Atoi(l["ttl_ms"])
			if ttl <= 0 || ttl > 30000 {
				t.Fatalf("ttl_ms %q", l["ttl_ms"])
			}
			eq(t, len(recs(t, admin(t, c, "LOCKS", "nothing:*"))), 0)
			eq(t, len(recs(t, admin(t, c, "LOCKS", "resource:*"))), 1)

			// STATS
			st := rec(t, admin(t, c, "STATS"))
			for k, want := range map[string]string{
				"grants": "2", "contention": "0", "token_checked_releases": "1", "rewritten": "1",
				"successor_deletions_prevented": "1", "successor_deletions": "0", "lapsed_leases": "1",
				"late_releases": "1", "refused": "0", "refused_notowner": "0", "locks_held": "1",
				"hold_time_count": "1", "wait_time_count": "2", "lock_rules": "1", "stale_fenced_writes_refused": "0",
			} {
				if st[k] != want {
					t.Errorf("STATS %s = %q, want %q", k, st[k], want)
				}
			}
			if hold, _ := strconv.ParseFloat(st["hold_time_max_ms"], 64); hold < 100 {
				t.Errorf("hold_time_max_ms %q: A held its lock 150 ms", st["hold_time_max_ms"])
			}

			// SESSIONS: B holds the lock.
			var found bool
			for _, s := range recs(t, admin(t, c, "SESSIONS")) {
				if s["addr"] == b.nc.LocalAddr().String() {
					found = true
					eq(t, s["name"], "worker-b")
					mustContain(t, s["locks"], "resource:lock grant 2")
				}
			}
			if !found {
				t.Fatal("B not in SESSIONS")
			}

			// CHECK
			ck := rec(t, admin(t, c, "CHECK", "resource:lock"))
			eq(t, ck["rule"], `1 "*:lock"`)
			mustContain(t, ck["del_holder"], "token-checked")
			mustContain(t, ck["del_stranger"], "refused: NOTOWNER")
			mustContain(t, ck["pexpire_stranger"], "refused: NOTOWNER")
			mustContain(t, ck["set_stranger"], "refused: LOCKED")
			eq(t, rec(t, admin(t, c, "CHECK", "plain"))["rule"], "<nil>")

			// FENCE: the caller's own grant number, nil without one.
			if v := admin(t, c, "FENCE", "resource:lock"); v != nil {
				t.Fatalf("FENCE from a stranger: %v", v)
			}

			// HELP
			help, _ := admin(t, c, "HELP").([]any)
			if len(help) < 10 || !strings.HasPrefix(fmt.Sprint(help[0]), "LOCKPROXY <subcommand>") {
				t.Fatalf("HELP: %v", help)
			}
		})
	}
	eq(t, b.do("LOCKPROXY", "FENCE", "resource:lock"), ":2\r\n")
	eq(t, a.do("LOCKPROXY", "FENCE", "resource:lock"), "$-1\r\n") // its release ended its grant
	a.do("HELLO", "3")
	eq(t, a.do("LOCKPROXY", "FENCE", "resource:lock"), "_\r\n")
	eq(t, b.do("LOCKPROXY", "fence", "nolock"), "$-1\r\n")
}

// The counters /metrics serves after the A/B story match the audit ring.
func TestAdminMetricsMatchAudit(t *testing.T) {
	e := newEnv(t, rulesOptions(t, abRules+"  - pattern: \"*:mutex\"\n    release: reject\n"))
	a, b := abStory(t, e)
	// More events: a stranger's DEL (NOTOWNER), a blind DEL under reject
	// (TOKENRELEASE), an overwrite (LOCKED), a contended SET NX.
	mustContain(t, a.do("DEL", "resource:lock"), "-NOTOWNER")
	eq(t, b.do("SET", "job:mutex", "t", "NX", "PX", "5000"), "+OK\r\n")
	eq(t, a.do("SET", "job:mutex", "u", "NX", "PX", "5000"), "$-1\r\n")
	mustContain(t, b.do("DEL", "job:mutex"), "-TOKENRELEASE")
	mustContain(t, a.do("SET", "job:mutex", "x"), "-LOCKED")
	eq(t, b.do("PEXPIRE", "resource:lock", "20000"), ":1\r\n")

	m := metrics(t, e)
	byOutcome := map[string]map[proxy.Outcome]int{}
	prevented := map[string]int{}
	for _, ev := range e.p.Events(1000) {
		if byOutcome[ev.Rule] == nil {
			byOutcome[ev.Rule] = map[proxy.Outcome]int{}
		}
		byOutcome[ev.Rule][ev.Outcome]++
		if ev.Outcome == proxy.OutcomeSuccessorPrevented || (ev.Outcome == proxy.OutcomeRefused && ev.Holder != "") {
			prevented[ev.Rule]++
		}
	}
	outcomes := []proxy.Outcome{proxy.OutcomeRewritten, proxy.OutcomeRefused, proxy.OutcomeObserved,
		proxy.OutcomeSuccessorPrevented, proxy.OutcomeSuccessorDeleted, proxy.OutcomeFlushed, proxy.OutcomeStaleRefused}
	total := 0
	for _, rule := range []string{"*:lock", "*:mutex"} {
		for _, o := range outcomes {
			got := metric(t, m, fmt.Sprintf(`lockproxy_lock_events_total{outcome="%s",rule="%s"}`, o, rule))
			if int(got) != byOutcome[rule][o] {
				t.Errorf("lock_events_total{%s,%s} = %v, audit ring has %d", rule, o, got, byOutcome[rule][o])
			}
			total += int(got)
		}
		eq(t, int(metric(t, m, fmt.Sprintf(`lockproxy_successor_deletions_prevented_total{rule="%s"}`, rule))), prevented[rule])
	}
	eq(t, total, len(e.p.Events(1000)))
	eq(t, byOutcome["*:lock"][proxy.OutcomeSuccessorPrevented], 1)
	eq(t, byOutcome["*:lock"][proxy.OutcomeRewritten], 1) // B's PEXPIRE
	for series, want := range map[string]float64{
		`lockproxy_grants_total{rule="*:lock"}`:                        2,
		`lockproxy_grants_total{rule="*:mutex"}`:                       1,
		`lockproxy_contention_total{rule="*:mutex"}`:                   1,
		`lockproxy_token_checked_releases_total{rule="*:lock"}`:        1,
		`lockproxy_token_checked_renewals_total{rule="*:lock"}`:        1,
		`lockproxy_late_releases_total{rule="*:lock"}`:                 1,
		`lockproxy_refusals_total{kind="NOTOWNER",rule="*:lock"}`:      1,
		`lockproxy_refusals_total{kind="TOKENRELEASE",rule="*:mutex"}`: 1,
		`lockproxy_refusals_total{kind="LOCKED",rule="*:mutex"}`:       1,
		`lockproxy_refusals_total{kind="UNFENCED",rule="*:lock"}`:      0,
		`lockproxy_successor_deletions_total{rule="*:lock"}`:           0,
		`lockproxy_stale_fenced_writes_refused_total{rule="*:lock"}`:   0,
		`lockproxy_lapsed_leases_total`:                                1,
		`lockproxy_lock_rules`:                                         2,
		`lockproxy_lock_hold_seconds_count{rule="*:lock"}`:             1,
		`lockproxy_lock_wait_seconds_count{rule="*:lock"}`:             2,
		`lockproxy_lock_wait_seconds_count{rule="*:mutex"}`:            1,
		`lockproxy_clients`:                                            2,
		`lockproxy_dedicated_sessions`:                                 0,
		`lockproxy_upstream_connections{kind="dedicated"}`:             0,
		`lockproxy_build_info{version="dev"}`:                          1,
		`lockproxy_admin_auth_failures_total`:                          0,
		`lockproxy_admin_auth_rate_limited_total`:                      0,
		`lockproxy_maxclients`:                                         10000,
		`lockproxy_upstream_dials_total{result="error"}`:               0,
		`lockproxy_config_last_reload_successful`:                      1,
	} {
		if got := metric(t, m, series); got != want {
			t.Errorf("%s = %v, want %v", series, got, want)
		}
	}
	if metric(t, m, `lockproxy_upstream_connections{kind="shared"}`) < 1 {
		t.Error("no shared upstream connection counted")
	}
	if metric(t, m, `lockproxy_client_bytes_total{direction="in"}`) < 100 || metric(t, m, `lockproxy_client_bytes_total{direction="out"}`) < 20 {
		t.Error("client bytes not counted")
	}
	if h := metric(t, m, `lockproxy_lock_hold_seconds_sum{rule="*:lock"}`); h < 0.1 {
		t.Errorf("hold seconds %v: A held its lock 150 ms", h)
	}
	// The same numbers in STATS.
	st := rec(t, admin(t, e.client(), "STATS"))
	eq(t, st["grants"], "3")
	eq(t, st["contention"], "1")
	eq(t, st["refused"], "3")
	eq(t, st["refused_tokenrelease"], "1")
	eq(t, st["successor_deletions_prevented"], fmt.Sprint(prevented["*:lock"]+prevented["*:mutex"]))

	// A dedicated session is counted while it lasts.
	d := dialRaw(t, e.addr)
	eq(t, d.do("MULTI"), "+OK\r\n")
	m = metrics(t, e)
	eq(t, metric(t, m, "lockproxy_dedicated_sessions"), 1.0)
	eq(t, metric(t, m, `lockproxy_upstream_connections{kind="dedicated"}`), 1.0)
	d.nc.Close()
	deadline := time.Now().Add(2 * time.Minute)
	for metric(t, metrics(t, e), "lockproxy_dedicated_sessions") != 0 {
		if time.Now().After(deadline) {
			t.Fatal("dedicated session still counted after its client left")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestAdminHealthz(t *testing.T) {
	e := newEnv(t, rulesOptions(t, abRules))
	srv := httptest.NewServer(e.p.MetricsHandler())
	defer srv.Close()
	get := func(path string) (int, string) {
		res, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(body)
	}
	code, body := get("/healthz")
	eq(t, code, 200)
	eq(t, body, "ok\n")
	code, _ = get("/readyz")
	eq(t, code, 200)
	e.srv.Stop()
	code, body = get("/healthz")
	eq(t, code, 503)
	mustContain(t, body, "upstream "+e.srv.Addr+" unreachable")
	code, _ = get("/readyz")
	eq(t, code, 503)
}

// Pipelined behind an acquisition, LOCKPROXY answers in order and sees it.
func TestAdminRepliesInOrder(t *testing.T) {
	e := newEnv(t, rulesOptions(t, abRules))
	r := dialRaw(t, e.addr)
	r.send(string(redisCmd("SET", "p:lock", "v", "NX", "PX", "5000")) + string(redisCmd("LOCKPROXY", "FENCE", "p:lock")) +
		string(redisCmd("GET", "p:lock")) + string(redisCmd("LOCKPROXY", "STATS")) + string(redisCmd("PING")))
	eq(t, r.read(), "+OK\r\n")
	eq(t, r.read(), ":1\r\n")
	eq(t, r.read(), bulk("v"))
	mustContain(t, r.read(), "*")
	eq(t, r.read(), "+PONG\r\n")

	// Inside MULTI the transaction is aborted, as Valkey aborts one with a
	// command it cannot queue.
	eq(t, r.do("MULTI"), "+OK\r\n")
	mustContain(t, r.do("LOCKPROXY", "STATS"), "-ERR LOCKPROXY is answered by lockproxy itself and cannot run inside MULTI")
	mustContain(t, r.do("EXEC"), "-EXECABORT")

	mustContain(t, r.do("LOCKPROXY"), "-ERR wrong number of arguments for 'lockproxy' command")
	mustContain(t, r.do("LOCKPROXY", "NOPE"), "-ERR unknown subcommand 'NOPE'. Try LOCKPROXY HELP.")
	mustContain(t, r.do("LOCKPROXY", "CHECK"), "-ERR wrong number of arguments for 'lockproxy|check' command")
	mustContain(t, r.do("LOCKPROXY", "AUDIT", "COUNT", "0"), "-ERR COUNT must be a positive integer")
	mustContain(t, r.do("LOCKPROXY", "AUDIT", "COUNT"), "-ERR syntax error")
}

// INFO lockproxy is one section in Valkey's INFO format; INFO without it is
// Valkey's own.
func TestInfoLockproxy(t *testing.T) {
	e := newEnv(t, rulesOptions(t, abRules))
	abStory(t, e)
	line := regexp.MustCompile(`^[a-z0-9_]+:[^\r\n]*$`)
	check := func(text string) map[string]string {
		t.Helper()
		if !strings.HasPrefix(text, "# Lockproxy\r\n") || !strings.HasSuffix(text, "\r\n") {
			t.Fatalf("INFO lockproxy: %q", text)
		}
		out := map[string]string{}
		for _, l := range strings.Split(strings.TrimSuffix(text, "\r\n"), "\r\n")[1:] {
			if !line.MatchString(l) {
				t.Fatalf("INFO line %q is not name:value", l)
			}
			k, v, _ := strings.Cut(l, ":")
			out[k] = v
		}
		return out
	}
	for _, protocol := range []int{2, 3} {
		c := e.client(func(o *redis.Options) { o.Protocol = protocol })
		f := check(c.Info(ctx, "lockproxy").Val())
		eq(t, f["grants"], "2")
		eq(t, f["successor_deletions_prevented"], "1")
		eq(t, f["lapsed_leases"], "1")
		eq(t, f["lock_rules"], "1")
		eq(t, f["lockproxy_version"], "dev")
		m := c.InfoMap(ctx, "lockproxy").Val()
		eq(t, m["Lockproxy"]["grants"], "2")
		both := c.Info(ctx, "server", "lockproxy").Val()
		mustContain(t, both, "# Server\r\n")
		mustContain(t, both, "\r\n\r\n# Lockproxy\r\n")
		plain, err := c.Info(ctx).Result()
		if err != nil || !strings.Contains(plain, "# Server\r\n") || strings.Contains(plain, "# Lockproxy") {
			t.Fatalf("INFO: %v %q", err, plain)
		}
		server, err := c.Info(ctx, "server").Result()
		if err != nil || !strings.HasPrefix(server, "# Server\r\n") || strings.Contains(server, "# Lockproxy") {
			t.Fatalf("INFO server: %v %q", err, server)
		}
	}
	r := dialRaw(t, e.addr)
	mustContain(t, r.do("INFO", "LOCKPROXY"), "\r\n# Lockproxy\r\nlockproxy_version:dev\r\n")
	mustContain(t, r.do("INFO", "keyspace"), "# Keyspace")
	// On a dedicated connection, and queued inside MULTI.
	eq(t, r.do("MULTI"), "+OK\r\n")
	eq(t, r.do("INFO", "server"), "+QUEUED\r\n")
	mustContain(t, r.do("EXEC"), "# Server")
	mustContain(t, r.do("INFO", "lockproxy"), "# Lockproxy")
	mustContain(t, r.do("INFO", "server"), "# Server")
	r = dialRaw(t, e.addr)
	r.do("HELLO", "3")
	got := r.do("info", "lockproxy")
	if !strings.HasPrefix(got, "=") || !strings.Contains(got, "\r\ntxt:# Lockproxy\r\n") {
		t.Fatalf("RESP3 INFO lockproxy: %q", got)
	}
}

func TestAdminAuth(t *testing.T) {
	e, _ := fileEnv(t, "admin:\n  password: s3cret\nupstream:\n  password: \"\"\n"+abRules)
	r := dialRaw(t, e.addr)
	mustContain(t, r.do("LOCKPROXY", "HELP"), "LOCKPROXY <subcommand>") // open
	eq(t, r.do("LOCKPROXY", "FENCE", "x:lock"), "$-1\r\n")              // open: the caller's own token
	for _, sub := range []string{"STATS", "AUDIT", "LOCKS", "SESSIONS", "CONFIG", "RELOAD"} {
		eq(t, r.do("LOCKPROXY", sub), "-NOAUTH LOCKPROXY "+sub+" requires LOCKPROXY AUTH <password> first (admin.password is set in the lockproxy config)\r\n")
	}
	mustContain(t, r.do("LOCKPROXY", "CHECK", "x:lock"), "-NOAUTH")
	mustContain(t, r.do("INFO", "lockproxy"), "# Lockproxy") // INFO is Valkey's command: open as INFO is
	eq(t, r.do("LOCKPROXY", "AUTH", "wrong"), "-WRONGPASS invalid lockproxy admin password; LOCKPROXY AUTH takes admin.password from the lockproxy config\r\n")
	mustContain(t, r.do("LOCKPROXY", "STATS"), "-NOAUTH")
	eq(t, r.do("LOCKPROXY", "AUTH", "s3cret"), "+OK\r\n")
	mustContain(t, r.do("LOCKPROXY", "STATS"), "admin_auth_failures\r\n$1\r\n1\r\n")
	cfg := r.do("LOCKPROXY", "CONFIG")
	mustContain(t, cfg, "admin.password\r\n"+bulk("(redacted)"))
	if strings.Contains(cfg, "s3cret") {
		t.Fatal("CONFIG shows the admin password")
	}
	eq(t, metric(t, metrics(t, e), "lockproxy_admin_auth_failures_total"), 1.0)

	// Another connection has not logged in; go-redis sees the same.
	c := e.client()
	err := c.Do(ctx, "LOCKPROXY", "STATS").Err()
	if err == nil || !strings.HasPrefix(err.Error(), "NOAUTH LOCKPROXY STATS requires") {
		t.Fatalf("go-redis without AUTH: %v", err)
	}
	eq(t, c.Do(ctx, "LOCKPROXY", "AUTH", "s3cret").Val(), "OK")
	_ = c.Close() // go-redis may use another pooled connection: do it on one
	c = e.client(func(o *redis.Options) {
		o.PoolSize = 1
		o.OnConnect = func(ctx context.Context, cn *redis.Conn) error {
			return cn.Do(ctx, "LOCKPROXY", "AUTH", "s3cret").Err()
		}
	})
	eq(t, rec(t, admin(t, c, "STATS"))["admin_auth_failures"], "1")
}

func TestAdminOpenRead(t *testing.T) {
	e, _ := fileEnv(t, "admin:\n  password: s3cret\n"+abRules, func(o *proxy.Options) { o.Admin.OpenRead = true })
	r := dialRaw(t, e.addr)
	for _, sub := range []string{"STATS", "AUDIT", "LOCKS", "SESSIONS"} {
		if got := r.do("LOCKPROXY", sub); got[0] != '*' {
			t.Fatalf("%s with read access open: %q", sub, got)
		}
	}
	mustContain(t, r.do("LOCKPROXY", "CHECK", "a:lock"), "*")
	mustContain(t, r.do("LOCKPROXY", "CONFIG"), "-NOAUTH LOCKPROXY CONFIG requires")
	mustContain(t, r.do("LOCKPROXY", "RELOAD"), "-NOAUTH LOCKPROXY RELOAD requires")
	eq(t, r.do("LOCKPROXY", "AUTH", "s3cret"), "+OK\r\n")
	mustContain(t, r.do("LOCKPROXY", "RELOAD"), "reloaded")
}

func TestAdminNoPassword(t *testing.T) {
	e, _ := fileEnv(t, abRules)
	r := dialRaw(t, e.addr)
	eq(t, r.do("LOCKPROXY", "AUTH", "x"), "-ERR LOCKPROXY AUTH called, but no admin password or users are configured (admin.password, admin.users); every LOCKPROXY subcommand is open\r\n")
	for _, sub := range []string{"STATS", "AUDIT", "LOCKS", "SESSIONS", "CONFIG", "RELOAD"} {
		if got := r.do("LOCKPROXY", sub); got[0] != '*' {
			t.Fatalf("%s without a password: %q", sub, got)
		}
	}
}

func TestAdminConfigRedacted(t *testing.T) {
	// Valkey's default user has no password (nopass), so it accepts the
	// proxy's login with any: the upstream password is in force too.
	e, path := fileEnv(t, "upstream:\n  password: pw-upstream\nadmin:\n  password: pw-admin\n"+abRules)
	c := e.client(func(o *redis.Options) {
		o.PoolSize = 1
		o.OnConnect = func(ctx context.Context, cn *redis.Conn) error {
			return cn.Do(ctx, "LOCKPROXY", "AUTH", "pw-admin").Err()
		}
	})
	cfg := rec(t, admin(t, c, "CONFIG"))
	eq(t, cfg["config_file"], path)
	eq(t, cfg["upstream.password"], "(redacted)")
	eq(t, cfg["upstream.username"], "")
	eq(t, cfg["admin.password"], "(redacted)")
	eq(t, cfg["upstream.addr"], e.srv.Addr)
	eq(t, cfg["locks[0].pattern"], "*:lock")
	eq(t, cfg["locks[0].release"], "rewrite")
	eq(t, cfg["upstream.dial_timeout"], "5s")
	eq(t, cfg["proto_max_bulk_len"], "512mb")
	for k, v := range cfg {
		if strings.Contains(v, "pw-") {
			t.Fatalf("CONFIG %s shows a secret", k)
		}
	}
}

// Reload under load: clients keep their connections and every command gets
// its reply; a broken file changes nothing and its error names the line; a
// good file's rules apply to the next command of every connection.
func TestReloadUnderLoad(t *testing.T) {
	e, path := fileEnv(t, abRules)
	good := abRules + "  - pattern: \"*:mutex\"\n    release: reject\n"
	broken := abRules + "  - pattern: \"*:mutex\"\n    release: sometimes\n"

	const workers = 4
	stop := make(chan struct{})
	var wg sync.WaitGroup
	counts := make([]int, workers)
	errs := make(chan error, workers)
	conns := make([]*raw, workers)
	for i := range conns {
		conns[i] = dialRaw(t, e.addr)
	}
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			r := conns[i]
			lock := fmt.Sprintf("w%d:lock", i)
			ctr := fmt.Sprintf("ctr%d", i)
			step := func(want string, args ...string) bool {
				r.send(string(redisCmd(args...)))
				got, err := r.readErr(10 * time.Second)
				if err != nil || got != want {
					errs <- fmt.Errorf("worker %d: %v: got %q (%v), want %q", i, args, got, err, want)
					return false
				}
				return true
			}
			for n := 1; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				if !step(fmt.Sprintf(":%d\r\n", n), "INCR", ctr) ||
					!step("+OK\r\n", "SET", lock, "t", "NX", "PX", "5000") ||
					!step(":1\r\n", "DEL", lock) {
					return
				}
				counts[i] = n
			}
		}(i)
	}
	r := dialRaw(t, e.addr)
	c := e.client()
	for round := 0; round < 5; round++ {
		time.Sleep(30 * time.Millisecond)
		writeFile(t, path, broken)
		got := r.do("LOCKPROXY", "RELOAD")
		mustContain(t, got, "-ERR lockproxy reload failed; the running configuration stays: "+path+":5: locks[1].release: \"sometimes\" is not one of rewrite, reject, observe")
		if _, err := e.p.Reload(); err == nil || !strings.Contains(err.Error(), path+":5:") {
			t.Fatalf("Reload of a broken file: %v", err)
		}
		time.Sleep(30 * time.Millisecond)
		writeFile(t, path, good)
		res := rec(t, admin(t, c, "RELOAD"))
		eq(t, res["status"], "reloaded")
		eq(t, res["lock_rules"], "2")
		eq(t, res["restart_needed"], "")
		time.Sleep(30 * time.Millisecond)
		writeFile(t, path, abRules)
		if res, err := e.p.Reload(); err != nil || res.Rules != 1 { // as SIGHUP does
			t.Fatalf("Reload: %+v %v", res, err)
		}
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// No command lost: each counter is exactly what its worker counted.
	for i := 0; i < workers; i++ {
		if counts[i] < 3 {
			t.Errorf("worker %d made only %d rounds", i, counts[i])
		}
		v, _ := e.direct().Get(ctx, fmt.Sprintf("ctr%d", i)).Int()
		eq(t, v, counts[i])
	}
	// Every worker's connection is still the one it started with.
	for i, w := range conns {
		if got := w.do("PING"); got != "+PONG\r\n" {
			t.Fatalf("worker %d's connection: %q", i, got)
		}
	}
	if n := e.p.Clients(); n < workers+2 {
		t.Fatalf("%d clients connected, want at least %d", n, workers+2)
	}

	// A broken file keeps the rules in force; a good one changes them for
	// connections that were open all along.
	writeFile(t, path, good)
	admin(t, c, "RELOAD")
	w := conns[0]
	eq(t, w.do("SET", "x:mutex", "t", "NX", "PX", "5000"), "+OK\r\n")
	mustContain(t, w.do("DEL", "x:mutex"), "-TOKENRELEASE")
	writeFile(t, path, broken)
	mustContain(t, r.do("LOCKPROXY", "RELOAD"), "-ERR lockproxy reload failed")
	mustContain(t, w.do("DEL", "x:mutex"), "-TOKENRELEASE")
	st := rec(t, admin(t, c, "STATS"))
	eq(t, st["config_reloads"], "11")
	eq(t, st["config_reload_failures"], "11")
	mustContain(t, st["last_reload"], "error: "+path+":5:")
	m := metrics(t, e)
	eq(t, metric(t, m, `lockproxy_config_reloads_total{result="ok"}`), 11.0)
	eq(t, metric(t, m, `lockproxy_config_reloads_total{result="error"}`), 11.0)
	eq(t, metric(t, m, `lockproxy_config_last_reload_successful`), 0.0)
	writeFile(t, path, good)
	admin(t, c, "RELOAD")
	eq(t, metric(t, metrics(t, e), `lockproxy_config_last_reload_successful`), 1.0)
}

// A change a reload cannot apply is reported, and the rest applies.
func TestReloadNeedsRestart(t *testing.T) {
	e, path := fileEnv(t, abRules)
	writeFile(t, path, "listen: 127.0.0.1:1\nmaxclients: 7\nmetrics:\n  listen: 127.0.0.1:9\n"+abRules+"  - pattern: \"*:mutex\"\n")
	res, err := e.p.Reload()
	if err != nil {
		t.Fatal(err)
	}
	eq(t, strings.Join(res.Restart, " "), "listen maxclients metrics.listen")
	eq(t, res.Rules, 2)
	cfg := rec(t, admin(t, e.client(), "CONFIG"))
	eq(t, cfg["listen"], config.DefaultListen) // still the running one
	eq(t, cfg["locks[1].pattern"], "*:mutex")
	eq(t, cfg["pending_restart"], "listen maxclients metrics.listen")

	// A proxy started without a file has nothing to reload.
	e2 := newEnv(t, rulesOptions(t, abRules))
	mustContain(t, dialRaw(t, e2.addr).do("LOCKPROXY", "RELOAD"), "-ERR lockproxy reload failed; the running configuration stays: no configuration file to reload")
}

// Rules added by a reload to a proxy that started with none apply at once.
func TestReloadFromNoRules(t *testing.T) {
	e, path := fileEnv(t, "")
	r := dialRaw(t, e.addr)
	eq(t, r.do("SET", "a:lock", "v", "NX", "PX", "5000"), "+OK\r\n")
	eq(t, r.do("DEL", "a:lock"), ":1\r\n") // no rules: a plain DEL
	writeFile(t, path, rule("reject"))
	mustContain(t, r.do("LOCKPROXY", "RELOAD"), "reloaded")
	eq(t, r.do("SET", "a:lock", "v", "NX", "PX", "5000"), "+OK\r\n")
	mustContain(t, r.do("DEL", "a:lock"), "-TOKENRELEASE")
	eq(t, r.do("LOCKPROXY", "FENCE", "a:lock"), ":1\r\n")
}

func TestAdminCheckFence(t *testing.T) {
	e := newEnv(t, rulesOptions(t, fenceRule("current", "reject")))
	c := e.client()
	ck := rec(t, admin(t, c, "CHECK", "{res}:lock"))
	mustContain(t, ck["fence"], "counter {base}:fence, guards {base}:data {base}:items, check current, unfenced_writes reject")
	eq(t, ck["guarded_key"], "{res}:data")
	mustContain(t, ck["guarded_write_holder"], "fenced:")
	mustContain(t, ck["guarded_write_stranger"], "refused: UNFENCED")
	g := rec(t, admin(t, c, "CHECK", "{res}:data"))
	eq(t, g["rule"], "<nil>")
	eq(t, g["guarded_by"], `1 "{*}:lock"`)
	mustContain(t, g["write_stranger"], "refused: UNFENCED")
}

func TestAuditFileRotation(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "audit.jsonl")
	e := newEnv(t, rulesOptions(t, abRules, func(o *proxy.Options) {
		o.Log.AuditFile, o.Log.AuditMaxSize, o.Log.AuditKeep = file, 1000, 50
	}))
	a, b := dialRaw(t, e.addr), dialRaw(t, e.addr)
	eq(t, a.do("SET", "f:lock", "secret-token-value", "NX", "PX", "30000"), "+OK\r\n")
	const n = 20
	for i := 0; i < n; i++ {
		mustContain(t, b.do("DEL", "f:lock"), "-NOTOWNER")
	}
	e.stopProxy() // the event writer has written every line once shutdown returns
	files, _ := filepath.Glob(file + "*")
	if len(files) < 3 {
		t.Fatalf("audit files %v: expected rotation", files)
	}
	lines := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if len(data) > 1000 {
			t.Errorf("%s has %d bytes, over the limit", f, len(data))
		}
		if strings.Contains(string(data), "secret-token-value") {
			t.Fatalf("%s holds a token", f)
		}
		for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			var ev map[string]any
			if err := json.Unmarshal([]byte(l), &ev); err != nil {
				t.Fatalf("%s: %q: %v", f, l, err)
			}
			eq(t, ev["outcome"], "refused")
			eq(t, ev["key"], "f:lock")
			lines++
		}
	}
	eq(t, lines, n)
}

// valkey-cli output parsing: every subcommand as an operator types it.

func needCLI(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("valkey-cli")
	if err != nil {
		t.Skip("valkey-cli not installed")
	}
	return bin
}

// cli runs valkey-cli against the proxy with commands on stdin (one
// connection for them all) and returns its output lines. Output to a pipe is
// valkey-cli's raw mode: one element per line, nested arrays flattened; in
// RESP3 (-3) a map entry is "field value" on one line.
func cli(t *testing.T, e *env, resp3 bool, commands ...string) []string {
	t.Helper()
	host, port, _ := net.SplitHostPort(e.addr)
	args := []string{"-h", host, "-p", port}
	if resp3 {
		args = append(args, "-3")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, needCLI(t), args...)
	cmd.Stdin = strings.NewReader(strings.Join(commands, "\n") + "\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("valkey-cli %v: %v", commands, err)
	}
	text := strings.ReplaceAll(string(out), "\r\n", "\n") // INFO's lines end in CRLF
	return strings.Split(strings.TrimSuffix(text, "\n"), "\n")
}

// pairs parses lines of field, value (RESP2) or "field value" (RESP3) into
// records, a new one starting at each line naming first.
func pairs(t *testing.T, lines []string, resp3 bool, first string) []map[string]string {
	t.Helper()
	var out []map[string]string
	add := func(k, v string) {
		if k == first || len(out) == 0 {
			out = append(out, map[string]string{})
		}
		out[len(out)-1][k] = v
	}
	if resp3 {
		for _, l := range lines {
			k, v, _ := strings.Cut(l, " ")
			add(k, v)
		}
		return out
	}
	if len(lines)%2 != 0 {
		t.Fatalf("odd number of lines: %q", lines)
	}
	for i := 0; i < len(lines); i += 2 {
		add(lines[i], lines[i+1])
	}
	return out
}

func TestAdminValkeyCLI(t *testing.T) {
	needCLI(t)
	e, path := fileEnv(t, "admin:\n  password: s3cret\n"+abRules)
	a, b := abStory(t, e)
	auth := "LOCKPROXY AUTH s3cret"
	for _, resp3 := range []bool{false, true} {
		t.Run(fmt.Sprintf("resp3=%v", resp3), func(t *testing.T) {
			run := func(cmd string) []string { return cli(t, e, resp3, auth, cmd)[1:] }
			eq(t, cli(t, e, resp3, auth)[0], "OK")

			help := cli(t, e, resp3, "LOCKPROXY HELP")
			eq(t, help[0], "LOCKPROXY <subcommand> [<arg> ...]. Subcommands are:")
			for _, sub := range []string{"AUDIT", "AUTH", "CHECK", "CONFIG", "FENCE", "HELP", "LOCKS", "REINDEX", "RELOAD", "SESSIONS", "STATS"} {
				mustContain(t, strings.Join(help, "\n"), "\n"+sub)
			}
			mustContain(t, cli(t, e, resp3, "LOCKPROXY STATS")[0], "NOAUTH LOCKPROXY STATS requires LOCKPROXY AUTH")
			mustContain(t, cli(t, e, resp3, "LOCKPROXY AUTH nope")[0], "WRONGPASS")

			evs := pairs(t, run("LOCKPROXY AUDIT KEY resource:*"), resp3, "time")
			eq(t, len(evs), 1)
			eq(t, evs[0]["outcome"], "successor_deletion_prevented")
			eq(t, evs[0]["key"], "resource:lock")
			eq(t, evs[0]["client_name"], "worker-a")
			eq(t, evs[0]["grant"], "1")
			eq(t, evs[0]["token"], "***(3 bytes)")
			eq(t, len(pairs(t, run("LOCKPROXY AUDIT COUNT 1 KEY resource:* OUTCOME successor_deletion_prevented"), resp3, "time")), 1)

			locks := pairs(t, run("LOCKPROXY LOCKS resource:*"), resp3, "key")
			eq(t, len(locks), 1)
			eq(t, locks[0]["holder"], b.nc.LocalAddr().String())
			eq(t, locks[0]["client_name"], "worker-b")
			eq(t, locks[0]["grant"], "2")
			eq(t, locks[0]["current"], "yes")
			if ttl, _ := strconv.Atoi(locks[0]["ttl_ms"]); ttl <= 0 || ttl > 30000 {
				t.Fatalf("ttl_ms %q", locks[0]["ttl_ms"])
			}

			st := pairs(t, run("LOCKPROXY STATS"), resp3, "lockproxy_version")[0]
			eq(t, st["grants"], "2")
			eq(t, st["successor_deletions_prevented"], "1")
			eq(t, st["lapsed_leases"], "1")
			eq(t, st["token_checked_releases"], "1")

			sess := strings.Join(run("LOCKPROXY SESSIONS"), "\n")
			mustContain(t, sess, a.nc.LocalAddr().String())
			mustContain(t, sess, "resource:lock grant 2 owner conn:")

			ck := pairs(t, run("LOCKPROXY CHECK resource:lock"), resp3, "key")[0]
			eq(t, ck["rule"], `1 "*:lock"`)
			mustContain(t, ck["del_stranger"], "refused: NOTOWNER")
			mustContain(t, ck["del_holder"], "token-checked")

			cfg := pairs(t, run("LOCKPROXY CONFIG"), resp3, "config_file")[0]
			eq(t, cfg["config_file"], path)
			eq(t, cfg["admin.password"], "(redacted)")
			eq(t, cfg["locks[0].pattern"], "*:lock")

			rl := pairs(t, run("LOCKPROXY RELOAD"), resp3, "status")[0]
			eq(t, rl["status"], "reloaded")
			eq(t, rl["lock_rules"], "1")

			info := cli(t, e, resp3, "INFO lockproxy")
			eq(t, info[0], "# Lockproxy")
			mustContain(t, strings.Join(info, "\n"), "\ngrants:2")
			mustContain(t, strings.Join(info, "\n"), "\nsuccessor_deletions_prevented:1")
		})
	}
	// FENCE: the caller's own token, in each protocol.
	for _, resp3 := range []bool{false, true} {
		eq(t, cli(t, e, resp3, "LOCKPROXY FENCE resource:lock")[0], "") // a new connection holds no grant
		fence := cli(t, e, resp3, "SET cli:lock t NX PX 5000", "LOCKPROXY FENCE cli:lock", "DEL cli:lock", "LOCKPROXY FENCE cli:lock")
		eq(t, fence[0], "OK")
		if n, err := strconv.Atoi(fence[1]); err != nil || n < 1 {
			t.Fatalf("FENCE after acquiring: %q", fence[1])
		}
		eq(t, fence[2], "1")
		eq(t, fence[3], "")
	}
}

// The admin commands that read Valkey (LOCKS, SESSIONS, STATS, FENCE) do
// so off the event loop: while one waits for a Valkey that does not answer
// (stopped here), another client of the same loop is served. The waiting
// command's answer still comes, once Valkey answers again.
func TestAdminReadsOffTheLoop(t *testing.T) {
	e := newEnv(t, rulesOptions(t, abRules))
	a, b := dialRaw(t, e.addr), dialRaw(t, e.addr)
	eq(t, a.do("SET", "off:lock", "v", "NX", "PX", "60000"), "+OK\r\n")
	mustContain(t, b.do("CLIENT", "ID"), ":")
	for _, sub := range [][]string{{"LOCKS"}, {"SESSIONS"}, {"STATS"}, {"FENCE", "off:lock"}} {
		var got, earlyReply string
		var err, early error
		whileStopped(t, e.srv, func() {
			a.send(string(redisCmd(append([]string{"LOCKPROXY"}, sub...)...)))
			time.Sleep(50 * time.Millisecond) // LOCKPROXY reached the proxy first
			b.send(string(redisCmd("CLIENT", "ID")))
			got, err = b.readErr(time.Second) // Valkey stopped: the read of the records waits 3 s before it fails
			earlyReply, early = a.readErr(100 * time.Millisecond)
		})
		if err != nil || !strings.HasPrefix(got, ":") {
			t.Errorf("LOCKPROXY %s waiting for Valkey: another client's CLIENT ID got %q, %v", sub[0], got, err)
		}
		if early == nil {
			t.Fatalf("LOCKPROXY %s answered while Valkey was stopped: %q", sub[0], earlyReply)
		}
		reply := a.read()
		if sub[0] == "FENCE" {
			eq(t, reply, ":1\r\n")
		} else {
			mustContain(t, reply, "*")
		}
	}
}
