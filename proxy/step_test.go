package proxy

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lockproxy/lockproxy/config"
	"github.com/lockproxy/lockproxy/resp"
	"github.com/lockproxy/lockproxy/rewrite"
	"github.com/lockproxy/lockproxy/upstream"
)

// stepProxy is a Proxy with no upstream and no socket: enough for the step
// decisions, which read the session's state and its pools' slots only.
func stepProxy() *Proxy {
	p := &Proxy{pools: map[poolKey]*upstream.Pool{}}
	p.opts.Config = config.Config{}
	p.opts.Upstream.PoolSize = 2
	p.decider.Store(&rewrite.Decider{})
	return p
}

// stepSession is an event loop's session of p, logged in, whose pool key
// has its connections open (open) or not.
func stepSession(p *Proxy, open bool) *session {
	s := &session{p: p, id: 1, clientState: clientState{proto: 2, authed: true}}
	s.lp = &loop{}
	if open {
		openPool(p, s.key(), 0)
	}
	return s
}

// openPool puts a pool of key into p whose connections and spares are open
// (connections with no socket: the step decisions only ask whether they
// are), but for spare number closed (from 1; 0: none), whose dial failed.
func openPool(p *Proxy, key poolKey, closed int) {
	spares := 0
	pl := upstream.NewPool(upstream.PoolConfig{
		Size:   p.opts.Upstream.PoolSize,
		Closed: func() bool { return false },
		Failed: func(error, time.Duration) {},
		Dial: func(spare bool) (*upstream.Conn, error) {
			if spare {
				if spares++; spares == closed {
					return nil, errors.New("not open, for the test")
				}
			}
			return &upstream.Conn{}, nil
		},
	})
	for i := range p.opts.Upstream.PoolSize {
		if _, err := pl.Conn(i); err != nil {
			panic(err)
		}
	}
	pl.OpenSpares()
	p.pools[key] = pl
}

func argsOf(line string) [][]byte {
	var args [][]byte
	for _, f := range strings.Fields(line) {
		args = append(args, []byte(f))
	}
	return args
}

// TestLoopStep: what a command asks of an event loop before it is handled,
// decided from the session's state alone: a connection of its own, the
// replies owed before it, a dial or the spares off the loop, or nothing.
func TestLoopStep(t *testing.T) {
	for _, c := range []struct {
		name     string
		cmd      string
		open     bool  // the session's pool has its connections
		owed     int64 // replies owed before the command
		loggedIn bool
		goro     bool // the session is on a goroutine of its own
		want     stepKind
	}{
		{"plain command, connected", "GET a", true, 0, true, false, stepNext},
		{"plain command behind replies", "GET a", true, 3, true, false, stepNext},
		{"plain command, no connection yet", "GET a", false, 0, true, false, stepOffLoop},
		{"transaction: asked for by route", "MULTI", true, 0, true, false, stepNext},
		{"transaction, no shared connection: none dialled", "MULTI", false, 0, true, false, stepNext},
		{"XREAD without BLOCK", "XREAD STREAMS s 0", true, 0, true, false, stepNext},
		{"CLIENT SETNAME", "CLIENT SETNAME x", true, 0, true, false, stepNext},
		{"not logged in: NOAUTH, no connection", "MULTI", false, 0, false, false, stepNext},
		{"INFO behind replies: settled where it is answered", "INFO", true, 1, true, false, stepNext},
		{"INFO, nothing owed", "INFO", true, 0, true, false, stepNext},
		{"admin command behind replies: settled where it is answered", "LOCKPROXY STATS", true, 2, true, false, stepNext},
		{"SELECT behind replies: the new pool dialled first", "SELECT 1", true, 1, true, false, stepOffLoop},
		{"SELECT of a pool not dialled", "SELECT 1", true, 0, true, false, stepOffLoop},
		{"SELECT out of range: the same pool", "SELECT x", true, 0, true, false, stepNext},
		{"HELLO 3 of a pool not dialled", "HELLO 3", true, 0, true, false, stepOffLoop},
		{"AUTH behind replies: settled where it is handled", "AUTH pw", true, 1, true, false, stepNext},
		{"AUTH: answered by the proxy or checked aside", "AUTH pw", false, 0, true, false, stepNext},
		{"QUIT", "QUIT", false, 0, true, false, stepNext},
		{"script call, spares open", "EVAL x 0", true, 0, true, false, stepNext},
		{"CLIENT PAUSE, spares open", "CLIENT PAUSE 10", true, 0, true, false, stepNext},
		{"on a goroutine: MULTI", "MULTI", true, 0, true, true, stepNext},
		{"on a goroutine: INFO behind replies", "INFO", true, 1, true, true, stepNext},
		{"on a goroutine: no connection yet", "GET a", false, 0, true, true, stepNext},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := stepProxy()
			s := stepSession(p, c.open)
			s.authed = c.loggedIn
			s.inflight.Store(c.owed)
			if c.goro {
				s.lp = nil
			}
			args := argsOf(c.cmd)
			got := s.loopStep(p.cmds().kind(args[0]), args)
			if got.do != c.want {
				t.Fatalf("%s: step %d, want %d", c.cmd, got.do, c.want)
			}
			if (got.do == stepOffLoop) != (got.job != nil) {
				t.Fatalf("%s: off the loop without a job, or a job elsewhere", c.cmd)
			}
		})
	}
}

// TestOwnConnAsked: a command that needs a connection of its own asks, as
// route's first decision on an event loop, to go on on a goroutine of the
// session's own, before anything is done for it; on that goroutine route
// goes on.
func TestOwnConnAsked(t *testing.T) {
	for _, c := range []struct {
		cmd  string
		want stepKind
	}{
		{"MULTI", stepOwnConn},
		{"BLPOP q 0", stepOwnConn},
		{"XREAD BLOCK 0 STREAMS s $", stepOwnConn},
		{"SUBSCRIBE ch", stepOwnConn},
		{"CLIENT TRACKING on", stepOwnConn},
		{"PSYNC ? -1", stepOwnConn},
		{"MONITOR", stepOwnConn},
	} {
		p := stepProxy()
		s := stepSession(p, true)
		args := argsOf(c.cmd)
		if !s.route(resp.Command{Args: args}, p.cmds().kind(args[0])) {
			t.Fatalf("%s: route ended the session", c.cmd)
		}
		if s.asked.do != c.want {
			t.Fatalf("%s: asked step %d, want %d", c.cmd, s.asked.do, c.want)
		}
		if s.ded != nil || s.inflight.Load() != 0 || len(s.bpend) != 0 {
			t.Fatalf("%s: something was done on the loop before the step", c.cmd)
		}
	}
}

// TestLoopStepSparesOffLoop: a script call or CLIENT PAUSE through a pool
// whose spare connections are not open asks, where it is handled, to open
// them off the loop first.
func TestLoopStepSparesOffLoop(t *testing.T) {
	p := stepProxy()
	s := stepSession(p, false)
	openPool(p, s.key(), 3)
	for _, cmd := range []string{"EVAL x 0", "FCALL f 0", "CLIENT PAUSE 10"} {
		args := argsOf(cmd)
		k := p.cmds().kind(args[0])
		s.holds = k == kForward && isScriptCall(args[0]) // as handle sets it
		if !s.route(resp.Command{Args: args}, k) || s.asked.do != stepOffLoop || s.asked.job == nil {
			t.Fatalf("%s with a spare closed: step %d, want off the loop", cmd, s.asked.do)
		}
		if s.inflight.Load() != 0 || len(s.bpend) != 0 {
			t.Fatalf("%s: something was sent before the spares", cmd)
		}
		s.asked = step{}
	}
}

// TestPutBack: a command put back is read again before anything the
// client sent after it, as it was, though the reader's buffer moves on.
func TestPutBack(t *testing.T) {
	s := &session{}
	raw := []byte("*2\r\n$3\r\nGET\r\n$1\r\na\r\n")
	buf := append([]byte(nil), raw...)
	cmd := resp.Command{Raw: buf, Args: [][]byte{buf[8:11:11], buf[17:18:18]}}
	s.putBack(cmd)
	for i := range buf {
		buf[i] = 'x'
	}
	got, st := s.read()
	if st.do != stepNext || string(got.Raw) != string(raw) || string(got.Args[0]) != "GET" || string(got.Args[1]) != "a" {
		t.Fatalf("read after putBack: %q %q step %d", got.Raw, got.Args, st.do)
	}
	if cap(got.Args[0]) != len(got.Args[0]) || cap(got.Raw) != len(got.Raw) {
		t.Fatal("a put-back argument has spare capacity: appending to it would overwrite the next")
	}
	if s.again != nil {
		t.Fatal("the put-back command is read twice")
	}
}

// TestSettleAsked: the commands that answer about the replies owed before
// them (LOCKPROXY's own, INFO lockproxy) or move the session to another
// pool (SELECT, HELLO, AUTH, RESET) ask, where they are handled, to be
// handled again once those replies are in; with none owed, or on a
// goroutine of the session's own, they ask nothing.
func TestSettleAsked(t *testing.T) {
	for _, c := range []struct {
		name string
		ask  func(s *session) bool // reports whether it went on
	}{
		{"settle (admin, INFO lockproxy, clusterInfo)", func(s *session) bool { return s.settle() }},
		{"SELECT", func(s *session) bool {
			s.selectDB(resp.Command{Args: argsOf("SELECT 1")})
			return s.asked.do != stepSettle
		}},
		{"HELLO", func(s *session) bool { s.hello(resp.Command{Args: argsOf("HELLO 3")}); return s.asked.do != stepSettle }},
		{"AUTH", func(s *session) bool { s.auth(resp.Command{Args: argsOf("AUTH pw")}); return s.asked.do != stepSettle }},
		{"RESET", func(s *session) bool { return !s.switchFirst() }},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := stepProxy()
			s := stepSession(p, true)
			s.inflight.Store(2)
			if c.ask(s) {
				t.Fatal("went on with replies owed on an event loop")
			}
			if s.asked.do != stepSettle {
				t.Fatalf("asked step %d, want stepSettle", s.asked.do)
			}
		})
	}
	p := stepProxy()
	s := stepSession(p, true)
	if !s.settle() || s.switchFirst() || s.asked.do != stepNext {
		t.Fatal("nothing owed: settle waited or a step was asked")
	}
	s.lp = nil
	s.inflight.Store(0)
	if s.switchFirst() || s.asked.do != stepNext {
		t.Fatal("on a goroutine of its own: a step was asked")
	}
}
