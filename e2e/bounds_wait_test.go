package e2e_test

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockproxy/lockproxy/config"
	"github.com/lockproxy/lockproxy/internal/valkeytest"
	"github.com/lockproxy/lockproxy/proxy"
)

// Every wait has a bound: whatever the upstream does, a client's command
// gets an error reply within upstream.reply_timeout (300 ms here), and a
// probe answers within a second. dial_timeout is 10 s, longer than the
// client's deadline (5 s): the bound must be reply_timeout's, not a dial's.
// Only that an error arrived before the deadline is asserted, never how
// fast. The faults are real: a closed port, a listener that accepts and
// never answers (a hung Valkey, a SIGSTOPped Sentinel), upstream TLS
// against a plaintext valkey-server, Sentinel at a closed port and at a
// hung one, a cluster whose only seed never answers. All but the closed
// port hung past the client's deadline on 9ae0d55.

const (
	waitReply  = 300 * time.Millisecond
	waitDial   = 10 * time.Second
	waitClient = 5 * time.Second // the client's deadline: a hang, not a slow machine
)

// hungListener accepts connections and never answers on them; it is
// closed when the test ends.
func hungListener(t *testing.T) string {
	t.Helper()
	l := listen(t)
	var mu sync.Mutex
	var held []net.Conn
	go func() {
		for {
			nc, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, nc)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, nc := range held {
			nc.Close()
		}
	})
	return l.Addr().String()
}

// closedPort is an address where nothing listens.
func closedPort(t *testing.T) string {
	t.Helper()
	l := listen(t)
	addr := l.Addr().String()
	l.Close()
	return addr
}

// boundedProxy starts a proxy with mod applied to its upstream settings
// (reply_timeout 300 ms, dial_timeout 10 s, a lock rule), serving clients
// and its probes, both stopped when the test ends.
func boundedProxy(t *testing.T, mod func(u *config.UpstreamConfig)) (addr, probes string) {
	t.Helper()
	o := rulesOptions(t, "locks:\n  - pattern: \"*:lock\"\n")
	o.Upstream.ReplyTimeout, o.Upstream.DialTimeout = config.Duration(waitReply), config.Duration(waitDial)
	o.Upstream.ReconnectBackoff, o.Upstream.MaxBackoff = config.Duration(50*time.Millisecond), config.Duration(200*time.Millisecond)
	mod(&o.Upstream)
	o.Logger = quietLogger()
	p, err := proxy.New(o)
	if err != nil {
		t.Fatal(err)
	}
	l := listen(t)
	done := make(chan error, 1)
	go func() { done <- p.Serve(l) }()
	hs := httptest.NewServer(p.MetricsHandler())
	t.Cleanup(func() {
		hs.Close()
		p.Close()
		<-done
		// go-redis probes a pool whose dials failed once a second until
		// it sees the pool closed, and a health check in the background
		// ends by dial_timeout; the package's leak check must find
		// neither.
		waitFor(t, 2*waitDial, "go-redis's dial probes and the health checks to end", func() bool {
			buf := make([]byte, 1<<20)
			stacks := string(buf[:runtime.Stack(buf, true)])
			return !strings.Contains(stacks, "(*ConnPool).tryDial") && !strings.Contains(stacks, "(*Health).recent")
		})
	})
	return l.Addr().String(), hs.URL
}

// expectBoundedErrors sends commands a client may send before and while
// the upstream fails (PING, a read, a lock's SET NX PX, MULTI's own
// connection), each on its own connection and again on one, and asserts
// each gets an error reply naming the upstream before the client's
// deadline; then that /readyz and /metrics answer before it too: 503, and
// lockproxy_upstream_up 0 with the reason word, and with counted the
// failed dials counted under it in lockproxy_upstream_errors_total (in
// front of a cluster whose map was never read nothing is dialled: the
// commands are refused first).
func expectBoundedErrors(t *testing.T, addr, probes, reason string, counted bool) {
	t.Helper()
	cmds := [][]string{{"PING"}, {"GET", "k"}, {"SET", "a:lock", "me", "NX", "PX", "10000"}, {"WATCH", "k"}}
	for round := 0; round < 2; round++ {
		r := dialRaw(t, addr)
		for _, c := range cmds {
			got, err := r.readErrDo(waitClient, c...)
			if err != nil {
				t.Fatalf("round %d, %s: no reply before the client's deadline (%v): a wait without a bound", round, strings.Join(c, " "), err)
			}
			if !strings.HasPrefix(got, "-UPSTREAM ") {
				t.Fatalf("round %d, %s: %q, want an UPSTREAM error", round, strings.Join(c, " "), got)
			}
		}
	}
	hc := &http.Client{Timeout: waitClient}
	res, err := hc.Get(probes + "/readyz")
	if err != nil {
		t.Fatalf("/readyz: no answer before the client's deadline: %v", err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("/readyz: %d, want 503", res.StatusCode)
	}
	waitFor(t, waitClient, "upstream_up with reason "+reason+", failures counted under it", func() bool {
		res, err := hc.Get(probes + "/metrics")
		if err != nil {
			t.Fatalf("/metrics: no answer before the client's deadline: %v", err)
		}
		defer res.Body.Close()
		var b strings.Builder
		_, _ = io.Copy(&b, res.Body)
		return strings.Contains(b.String(), `lockproxy_upstream_up{reason="`+reason+`"} 0`) &&
			(!counted || !strings.Contains(b.String(), `lockproxy_upstream_errors_total{reason="`+reason+`"} 0`))
	})
}

func TestWaitBoundClosedPort(t *testing.T) {
	t.Parallel()
	dead := closedPort(t)
	addr, probes := boundedProxy(t, func(u *config.UpstreamConfig) { u.Addr = dead })
	expectBoundedErrors(t, addr, probes, "unreachable", true)
}

func TestWaitBoundHungUpstream(t *testing.T) {
	t.Parallel()
	hung := hungListener(t)
	addr, probes := boundedProxy(t, func(u *config.UpstreamConfig) { u.Addr = hung })
	expectBoundedErrors(t, addr, probes, "timeout", true)
}

func TestWaitBoundTLSAgainstPlaintext(t *testing.T) {
	t.Parallel()
	srv := valkeytest.Start(t)
	addr, probes := boundedProxy(t, func(u *config.UpstreamConfig) {
		u.Addr = srv.Addr
		u.TLS.Enabled, u.TLS.InsecureSkipVerify = true, true
	})
	expectBoundedErrors(t, addr, probes, "tls_mismatch", true)
}

func TestWaitBoundSentinelDown(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, sentinel string }{
		{"closed", closedPort(t)},
		{"hung", hungListener(t)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr, probes := boundedProxy(t, func(u *config.UpstreamConfig) {
				u.Addr = "127.0.0.1:6379" // the default, unused with Sentinel
				u.Sentinel.Master, u.Sentinel.Addrs = "mymaster", []string{tc.sentinel}
			})
			expectBoundedErrors(t, addr, probes, "unreachable", true)
		})
	}
}

func TestWaitBoundClusterSeedHung(t *testing.T) {
	t.Parallel()
	hung := hungListener(t)
	addr, probes := boundedProxy(t, func(u *config.UpstreamConfig) {
		u.Addr = "127.0.0.1:6379" // the default, unused in front of a cluster
		u.Cluster.Seeds = []string{hung}
	})
	expectBoundedErrors(t, addr, probes, "timeout", false)
}
