package e2e_test

import (
	"strings"
	"testing"

	"github.com/lockproxy/lockproxy/proxy"
)

// Per-command counts, error code words and client-seen latency on /metrics:
// a few commands sent through the proxy come out under their own names,
// an unknown name under "unknown", and an error under its code word.
func TestPerCommandMetrics(t *testing.T) {
	e := newEnv(t, proxy.Options{})
	r := dialRaw(t, e.addr)
	eq(t, r.do("SET", "k", "v"), "+OK\r\n")
	eq(t, r.do("GET", "k"), bulk("v"))
	eq(t, r.do("get", "k"), bulk("v"))
	mustContain(t, r.do("LPUSH", "k", "x"), "-WRONGTYPE ")
	mustContain(t, r.do("NOSUCHCOMMAND", "a"), "-ERR unknown command")
	// A pipelined run with an error in the middle: each reply counted
	// under its own command.
	r.send(string(redisCmd("GET", "k")) + string(redisCmd("INCR", "k")) + string(redisCmd("GET", "k")))
	eq(t, r.read(), bulk("v"))
	mustContain(t, r.read(), "-ERR value is not an integer")
	eq(t, r.read(), bulk("v"))

	m := metrics(t, e)
	for series, want := range map[string]float64{
		`lockproxy_command_total{command="set"}`:                               1,
		`lockproxy_command_total{command="get"}`:                               4,
		`lockproxy_command_total{command="lpush"}`:                             1,
		`lockproxy_command_total{command="incr"}`:                              1,
		`lockproxy_command_total{command="unknown"}`:                           1,
		`lockproxy_command_errors_total{code="WRONGTYPE",command="lpush"}`:     1,
		`lockproxy_command_errors_total{code="ERR",command="unknown"}`:         1,
		`lockproxy_command_errors_total{code="ERR",command="incr"}`:            1,
		`lockproxy_command_duration_seconds_count{command="get"}`:              4,
		`lockproxy_command_duration_seconds_count{command="set"}`:              1,
		`lockproxy_command_duration_seconds_count{command="unknown"}`:          1,
		`lockproxy_command_duration_seconds_bucket{command="set",le="+Inf"}`:   1,
		`lockproxy_command_duration_seconds_bucket{command="lpush",le="+Inf"}`: 1,
	} {
		if got := metric(t, m, series); got != want {
			t.Errorf("%s = %v, want %v", series, got, want)
		}
	}
	for series := range m {
		if strings.HasPrefix(series, "lockproxy_command_errors_total") && strings.Contains(series, `command="get"`) {
			t.Errorf("GET had no error, yet %s", series)
		}
		if strings.Contains(series, "nosuchcommand") {
			t.Errorf("an unknown name is its own series: %s", series)
		}
	}
	if v := metric(t, m, `lockproxy_command_duration_seconds_sum{command="get"}`); v <= 0 {
		t.Errorf("GET's latency sum is %v, want > 0", v)
	}
}

// The latency is the client's: a BLPOP that waits 0.3 s on an empty list
// is timed at 0.3 s or more (on its own connection, not a shared one's
// round trip), and the default slow log (100ms) keeps it, with its key
// count and no key.
func TestClientSeenLatencyAndDefaultSlowlog(t *testing.T) {
	e := newEnv(t, proxy.Options{})
	r := dialRaw(t, e.addr)
	r.do("LOCKPROXY", "CHECK", "x") // Valkey's command table read: keys are counted
	eq(t, r.do("BLPOP", "empty-list-name", "0.3"), "*-1\r\n")
	eq(t, r.do("GET", "k"), "$-1\r\n")

	m := metrics(t, e)
	eq(t, metric(t, m, `lockproxy_command_duration_seconds_count{command="blpop"}`), float64(1))
	eq(t, metric(t, m, `lockproxy_command_duration_seconds_bucket{command="blpop",le="0.25"}`), float64(0))
	if s := metric(t, m, `lockproxy_command_duration_seconds_sum{command="blpop"}`); s < 0.3 {
		t.Errorf("BLPOP timed at %v s, want at least the 0.3 s it waited", s)
	}
	if n := metric(t, m, "lockproxy_slow_commands_total"); n < 1 {
		t.Errorf("slow_commands_total = %v, want the BLPOP at least", n)
	}
	got := r.do("LOCKPROXY", "SLOWLOG", "GET", "-1")
	mustContain(t, got, bulk("blpop")+bulk("keys=1")+bulk("args=2"))
	if strings.Contains(got, "empty-list-name") {
		t.Errorf("SLOWLOG names the key: %q", got)
	}
}
