package e2e_test

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockproxy/lockproxy/config"
	"github.com/lockproxy/lockproxy/proxy"
	"github.com/lockproxy/lockproxy/resp"
)

// lockedBuf is a log destination read while the proxy writes to it.
type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// With slowlog.threshold 0 every command is slow: LOCKPROXY SLOWLOG and
// the log name it, its keys and arguments counted, the client, and never
// a key or a value.
func TestSlowlogRecordsWithoutValues(t *testing.T) {
	var logs lockedBuf
	zero := config.Duration(0)
	e := newEnv(t, proxy.Options{Config: config.Config{Slowlog: config.SlowlogConfig{Threshold: &zero, MaxLen: 4}},
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	r := dialNamed(t, e.addr, "worker-7")
	// The command table is read in the background at start, and keys are
	// counted once it is in: CHECK reads it first.
	r.do("LOCKPROXY", "CHECK", "x")
	eq(t, r.do("LOCKPROXY", "SLOWLOG", "RESET"), "+OK\r\n")
	eq(t, r.do("MSET", "secret-key-1", "secret-value-1", "secret-key-2", "secret-value-2"), "+OK\r\n")
	mustContain(t, r.do("LPUSH", "secret-key-1", "secret-value-3"), "-WRONGTYPE")

	got := r.do("LOCKPROXY", "SLOWLOG", "GET", "2")
	v, _, err := resp.Parse([]byte(got))
	if err != nil || v.Type != '*' || len(v.Elems) != 2 {
		t.Fatalf("SLOWLOG GET 2: %q", got)
	}
	for _, secret := range []string{"secret-key", "secret-value"} {
		if strings.Contains(got, secret) {
			t.Errorf("SLOWLOG GET shows %s: %q", secret, got)
		}
	}
	// Newest first, shaped as Valkey's: id, time, microseconds, the
	// "arguments", address, name.
	want := [][]string{
		{"lpush", "keys=1", "args=2", "error=WRONGTYPE"},
		{"mset", "keys=2", "args=4"},
	}
	for i, ent := range v.Elems {
		if len(ent.Elems) != 6 {
			t.Fatalf("entry %d has %d fields, want Valkey's 6: %q", i, len(ent.Elems), got)
		}
		if ent.Elems[0].Type != ':' || ent.Elems[1].Type != ':' || ent.Elems[2].Type != ':' {
			t.Errorf("entry %d: id, time and duration are integers: %q", i, got)
		}
		if d := time.Since(time.Unix(ent.Elems[1].Int, 0)); d < -time.Minute || d > time.Hour {
			t.Errorf("entry %d's time is %v ago", i, d)
		}
		var notes []string
		for _, a := range ent.Elems[3].Elems {
			notes = append(notes, string(a.Str))
		}
		joined := strings.Join(notes, " ")
		for _, w := range want[i] {
			if !strings.Contains(joined, w) {
				t.Errorf("entry %d: %q has no %q", i, joined, w)
			}
		}
		if !strings.Contains(joined, "client_id=") {
			t.Errorf("entry %d names no client id: %q", i, joined)
		}
		if a := string(ent.Elems[4].Str); !strings.HasPrefix(a, "127.0.0.1:") {
			t.Errorf("entry %d's client address is %q", i, a)
		}
		eq(t, string(ent.Elems[5].Str), "worker-7")
	}
	if v.Elems[0].Elems[0].Int <= v.Elems[1].Elems[0].Int {
		t.Errorf("ids rise: newest %d, older %d", v.Elems[0].Elems[0].Int, v.Elems[1].Elems[0].Int)
	}
	// max_len 4 keeps the newest 4.
	for range 5 {
		r.do("PING")
	}
	eq(t, r.do("LOCKPROXY", "SLOWLOG", "LEN"), ":4\r\n")
	eq(t, r.do("LOCKPROXY", "SLOWLOG", "RESET"), "+OK\r\n")
	// As in Valkey, the RESET is logged once it ran.
	eq(t, r.do("LOCKPROXY", "SLOWLOG", "LEN"), ":1\r\n")
	mustContain(t, r.do("LOCKPROXY", "SLOWLOG", "GET", "x"), "-ERR LOCKPROXY SLOWLOG GET takes a count")
	mustContain(t, r.do("LOCKPROXY", "SLOWLOG", "FLUSH"), "-ERR unknown LOCKPROXY SLOWLOG subcommand 'FLUSH'")

	// The log line: the same facts, no values.
	m := metrics(t, e)
	if n := metric(t, m, "lockproxy_slow_commands_total"); n < 8 {
		t.Errorf("slow_commands_total = %v, want at least 8", n)
	}
	e.stopProxy() // the log lines are written
	out := logs.String()
	if !strings.Contains(out, `msg="slow command" command=mset keys=2 args=4`) ||
		!strings.Contains(out, "client_name=worker-7") {
		t.Errorf("no slow command line for MSET:\n%s", out)
	}
	if strings.Contains(out, "secret-") {
		t.Errorf("the log shows a key or value:\n%s", out)
	}
}

// LOCKPROXY SLOWLOG is gated like the other read subcommands, and RESET
// needs role operate.
func TestSlowlogAdminGated(t *testing.T) {
	e := newEnv(t, proxy.Options{Config: config.Config{Admin: config.AdminConfig{Users: []config.AdminUser{
		{Name: "viewer", Password: "view-pw", Role: config.AdminRead},
	}}}})
	r := dialRaw(t, e.addr)
	mustContain(t, r.do("LOCKPROXY", "SLOWLOG", "GET"), "-NOAUTH LOCKPROXY SLOWLOG requires LOCKPROXY AUTH")
	eq(t, r.do("LOCKPROXY", "AUTH", "viewer", "view-pw"), "+OK\r\n")
	eq(t, r.do("LOCKPROXY", "SLOWLOG", "LEN"), ":0\r\n")
	mustContain(t, r.do("LOCKPROXY", "SLOWLOG", "RESET"), "-NOPERM LOCKPROXY SLOWLOG RESET needs an admin user with role operate")
}
