package e2e_test

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// counterLines pairs each line of INFO lockproxy and LOCKPROXY STATS with
// the /metrics series it is the sum of: a metric name and, optionally, one
// label's value (every series of that name with it, whatever its other
// labels say).
var counterLines = []struct{ line, metric, label string }{
	{"connected_clients", "lockproxy_clients", ""},
	{"rejected_clients", "lockproxy_clients_rejected_total", ""},
	{"maxclients", "lockproxy_maxclients", ""},
	{"dedicated_sessions", "lockproxy_dedicated_sessions", ""},
	{"upstream_connections", "lockproxy_upstream_connections", ""},
	{"upstream_dials", "lockproxy_upstream_dials_total", `result="ok"`},
	{"upstream_dial_failures", "lockproxy_upstream_dials_total", `result="error"`},
	{"upstream_errors_timeout", "lockproxy_upstream_errors_total", `reason="timeout"`},
	{"upstream_errors_unreachable", "lockproxy_upstream_errors_total", `reason="unreachable"`},
	{"upstream_failed_commands", "lockproxy_upstream_failed_commands_total", ""},
	{"commands_forward", "lockproxy_commands_total", `family="forward"`},
	{"commands_lock", "lockproxy_commands_total", `family="lock"`},
	{"commands_connection", "lockproxy_commands_total", `family="connection"`},
	{"commands_dedicated", "lockproxy_commands_total", `family="dedicated"`},
	{"lock_rules", "lockproxy_lock_rules", ""},
	{"grants", "lockproxy_grants_total", ""},
	{"contention", "lockproxy_contention_total", ""},
	{"token_checked_releases", "lockproxy_token_checked_releases_total", ""},
	{"token_checked_renewals", "lockproxy_token_checked_renewals_total", ""},
	{"refused", "lockproxy_lock_events_total", `outcome="refused"`},
	{"observed", "lockproxy_lock_events_total", `outcome="observed"`},
	{"refused_notowner", "lockproxy_refusals_total", `kind="NOTOWNER"`},
	{"refused_tokenrelease", "lockproxy_refusals_total", `kind="TOKENRELEASE"`},
	{"refused_locked", "lockproxy_refusals_total", `kind="LOCKED"`},
	{"refused_unfenced", "lockproxy_refusals_total", `kind="UNFENCED"`},
	{"successor_deletions_prevented", "lockproxy_successor_deletions_prevented_total", ""},
	{"successor_deletions", "lockproxy_successor_deletions_total", ""},
	{"lapsed_leases", "lockproxy_lapsed_leases_total", ""},
	{"late_releases", "lockproxy_late_releases_total", ""},
	{"stale_fenced_writes_refused", "lockproxy_stale_fenced_writes_refused_total", ""},
	{"hold_time_count", "lockproxy_lock_hold_seconds_count", ""},
	{"wait_time_count", "lockproxy_lock_wait_seconds_count", ""},
	{"admin_auth_failures", "lockproxy_admin_auth_failures_total", ""},
	{"admin_auth_rate_limited", "lockproxy_admin_auth_rate_limited_total", ""},
	{"config_reloads", "lockproxy_config_reloads_total", `result="ok"`},
	{"config_reload_failures", "lockproxy_config_reloads_total", `result="error"`},
	{"log_warnings", "lockproxy_log_messages_total", `level="warn"`},
	{"log_errors", "lockproxy_log_messages_total", `level="error"`},
	{"audit_events_dropped", "lockproxy_audit_events_dropped_total", ""},
	{"epoch", "lockproxy_epoch", ""},
	{"grants_lost", "lockproxy_grants_lost_total", ""},
	{"grants_undone", "lockproxy_grants_undone_total", ""},
	{"durable_writes_short", "lockproxy_durable_writes_short_total", ""},
}

// sumSeries adds the samples of a metric, those with label only when given.
func sumSeries(m map[string]float64, metric, label string) (float64, bool) {
	var sum float64
	found := false
	for series, v := range m {
		name, labels, _ := strings.Cut(series, "{")
		if name != metric || (label != "" && !strings.Contains(labels, label)) {
			continue
		}
		sum += v
		found = true
	}
	return sum, found
}

// After known lock traffic, INFO lockproxy, LOCKPROXY STATS and /metrics
// give every number the same value: they render one counter table.
func TestCountersAgreeAcrossRenderers(t *testing.T) {
	e := newEnv(t, rulesOptions(t, abRules+"  - pattern: \"*:mutex\"\n    release: reject\n  - pattern: \"audit:*\"\n    release: observe\n"))
	a, b := abStory(t, e)
	// Under release: observe, A's late DEL removes B's lock: a successor
	// deletion, which INFO's observed no longer counts (/metrics never did).
	eq(t, a.do("SET", "audit:x", "abc", "NX", "PX", "100"), "+OK\r\n")
	time.Sleep(150 * time.Millisecond) // A's lease runs out
	eq(t, b.do("SET", "audit:x", "xyz", "NX", "PX", "30000"), "+OK\r\n")
	eq(t, a.do("DEL", "audit:x"), ":1\r\n")
	mustContain(t, a.do("DEL", "resource:lock"), "-NOTOWNER")
	eq(t, b.do("SET", "job:mutex", "t", "NX", "PX", "5000"), "+OK\r\n")
	eq(t, a.do("SET", "job:mutex", "u", "NX", "PX", "5000"), "$-1\r\n")
	mustContain(t, b.do("DEL", "job:mutex"), "-TOKENRELEASE")
	mustContain(t, a.do("SET", "job:mutex", "x"), "-LOCKED")
	eq(t, b.do("PEXPIRE", "resource:lock", "20000"), ":1\r\n")
	eq(t, b.do("DEL", "resource:lock"), ":1\r\n")
	for i := 0; i < 5; i++ {
		eq(t, a.do("SET", "plain", strconv.Itoa(i)), "+OK\r\n")
		eq(t, a.do("GET", "plain"), bulk(strconv.Itoa(i)))
	}
	eq(t, a.do("MULTI"), "+OK\r\n") // a's own connection from here
	eq(t, a.do("DISCARD"), "+OK\r\n")

	c := e.client()
	info := infoFields(c.Info(ctx, "lockproxy").Val())
	for _, protocol := range []int{2, 3} {
		c := e.client(func(o *redis.Options) { o.Protocol = protocol })
		stats := rec(t, admin(t, c, "STATS"))
		for k, v := range info {
			switch {
			case k == "uptime_in_seconds", strings.HasPrefix(k, "client_"), k == "commands_admin",
				k == "commands_connection", k == "connected_clients", strings.HasPrefix(k, "upstream_"):
				continue // changed by the reads themselves
			}
			if stats[k] != v {
				t.Errorf("RESP%d: STATS %s = %q, INFO says %q", protocol, k, stats[k], v)
			}
		}
		for k := range stats {
			if _, ok := info[k]; !ok && k != "locks_held" {
				t.Errorf("STATS has %s, INFO lockproxy does not", k)
			}
		}
	}
	// The reads since INFO: two clients' HELLO, CLIENT SETINFO ... and two
	// STATS; none of it lock traffic, so only those lines moved.
	m := metrics(t, e)
	for _, l := range counterLines {
		want, ok := info[l.line]
		if !ok {
			t.Errorf("INFO lockproxy has no line %s", l.line)
			continue
		}
		got, found := sumSeries(m, l.metric, l.label)
		if !found {
			t.Errorf("/metrics has no %s{%s}", l.metric, l.label)
			continue
		}
		switch l.line {
		case "connected_clients", "commands_connection", "upstream_connections", "upstream_dials":
			continue // the clients of the reads
		}
		if fmt.Sprint(got) != want {
			t.Errorf("%s: INFO says %s, /metrics %s{%s} sums to %v", l.line, want, l.metric, l.label, got)
		}
	}
	// What the traffic above was, counted once: the lock family is every
	// command on a lock key but b's GET (no rule decides a read), the
	// forward family the ten plain commands, that GET and DISCARD.
	for line, want := range map[string]string{
		"successor_deletions": "1", "observed": "0",
		"grants": "5", "contention": "1", "token_checked_releases": "2", "token_checked_renewals": "1",
		"refused": "3", "refused_notowner": "1", "refused_tokenrelease": "1", "refused_locked": "1",
		"successor_deletions_prevented": "1", "lapsed_leases": "1", "late_releases": "1",
		"commands_forward": "12", "commands_lock": "13", "commands_dedicated": "1", "hold_time_count": "2",
		"upstream_connections": info["upstream_connections"],
	} {
		if info[line] != want {
			t.Errorf("INFO %s = %s, want %s", line, info[line], want)
		}
	}
	// The round trips of the commands sent to Valkey are timed by family.
	if n, _ := sumSeries(m, "lockproxy_upstream_round_trip_seconds_count", `family="forward"`); n < 10 {
		t.Errorf("upstream round trips of forwarded commands: %v, want at least 10", n)
	}
	if n, _ := sumSeries(m, "lockproxy_upstream_round_trip_seconds_count", `family="lock"`); n < 1 {
		t.Errorf("upstream round trips of lock commands: %v, want at least 1", n)
	}
	// INFO's upstream_connections is both kinds together.
	up, _ := sumSeries(m, "lockproxy_upstream_connections", "")
	ded, _ := sumSeries(m, "lockproxy_upstream_connections", `kind="dedicated"`)
	if ded < 1 || up <= ded {
		t.Errorf("upstream_connections: %v in all, %v dedicated", up, ded)
	}
}

// Every metric name the dashboard, the alert rules and their tests use
// exists on /metrics (deploy/).
func TestCountersKeepDeployedNames(t *testing.T) {
	e := newEnv(t, rulesOptions(t, abRules))
	a, _ := abStory(t, e)
	mustContain(t, a.do("NOSUCHCOMMAND"), "-ERR") // an error reply: lockproxy_command_errors_total
	m := metrics(t, e)
	have := map[string]bool{}
	for series := range m {
		name, _, _ := strings.Cut(series, "{")
		have[name] = true
	}
	for series := range metrics(t, tlsListenerEnv(t)) { // the certificate series
		name, _, _ := strings.Cut(series, "{")
		have[name] = true
	}
	used := deployedMetricNames(t)
	if len(used) < 10 {
		t.Fatalf("found only %d metric names in deploy/: %v", len(used), used)
	}
	var missing []string
	for name := range used {
		if !have[name] && !have[name+"_count"] { // a histogram's own name
			missing = append(missing, name)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("deploy/ uses metrics /metrics does not serve: %v", missing)
	}
}

// deployedMetricNames are the lockproxy_ names deploy/'s files (the
// dashboard, the alert rules and their tests, the manifests) mention.
func deployedMetricNames(t *testing.T) map[string]bool {
	t.Helper()
	re := regexp.MustCompile(`lockproxy_[a-z_]+`)
	out := map[string]bool{}
	err := filepath.WalkDir("../deploy", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, n := range re.FindAllString(string(b), -1) {
			out[n] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A command whose reply does not come within reply_timeout is answered
// with an UPSTREAM error and counted: upstream_errors_total{reason=
// "timeout"} for the connection, upstream_failed_commands_total for the
// command, the same in INFO lockproxy.
func TestCountersUpstreamTimeout(t *testing.T) {
	e := newEnv(t, faultOptions())
	a := dialRaw(t, e.addr)
	eq(t, a.do("SET", "k", "v"), "+OK\r\n")
	resume := stopServer(t, e.srv)
	a.send(string(redisCmd("GET", "k")))
	got, err := a.readErr(replyDeadline)
	if err != nil {
		t.Fatalf("no reply while Valkey is paused: %v", err)
	}
	mustContain(t, got, "-UPSTREAM")
	mustContain(t, got, "reply_timeout")
	resume()
	m := metrics(t, e)
	if n := metric(t, m, `lockproxy_upstream_errors_total{reason="timeout"}`); n < 1 {
		t.Errorf("upstream_errors_total{reason=timeout} = %v, want at least 1", n)
	}
	if n := metric(t, m, `lockproxy_upstream_failed_commands_total`); n < 1 {
		t.Errorf("upstream_failed_commands_total = %v, want at least 1", n)
	}
	// INFO goes nowhere near Valkey: it reads the same counters.
	info := infoFields(dialRaw(t, e.addr).do("INFO", "lockproxy"))
	for line, series := range map[string]string{
		"upstream_errors_timeout":  `lockproxy_upstream_errors_total{reason="timeout"}`,
		"upstream_failed_commands": `lockproxy_upstream_failed_commands_total`,
	} {
		if want := fmt.Sprint(metric(t, m, series)); info[line] != want {
			t.Errorf("INFO %s = %s, /metrics %s = %s", line, info[line], series, want)
		}
	}
}
