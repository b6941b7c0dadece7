package proxy

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lockproxy/lockproxy/commands"
	"github.com/lockproxy/lockproxy/config"
	"github.com/lockproxy/lockproxy/evloop"
	"github.com/lockproxy/lockproxy/resp"
	"github.com/lockproxy/lockproxy/rewrite"
	"github.com/lockproxy/lockproxy/upstream"
)

// stepProxy is a Proxy with no upstream and no socket: enough for the step
// decisions, which read the session's state and its pools' slots only.
func stepProxy() *Proxy {
	p := &Proxy{}
	p.opts.Config = config.Config{}
	p.opts.Upstream.PoolSize = 2
	p.opts.MaxPipeline = 1000
	p.decider.Store(&rewrite.Decider{})
	// admin_commands: forward; stepProxy has no admin to ask (gate.go).
	p.adminCmds.Store(adminCmdsCode(config.AdminCommandsForward))
	return p
}

// stepSession is an event loop's session of p, logged in, whose pool key
// has its connections open (open) or not.
func stepSession(p *Proxy, open bool) *session {
	s := &session{p: p, id: 1, clientState: clientState{proto: 2, authed: true}}
	s.lp = &evloop.Loop{}
	s.home = s.lp
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
	p.pools.Put(key, pl)
}

func argsOf(line string) [][]byte {
	var args [][]byte
	for _, f := range strings.Fields(line) {
		args = append(args, []byte(f))
	}
	return args
}

// dialPool puts a pool of key into p whose connections are not dialled
// yet, with its spares open (spares) or not; its dials give a connection
// with no socket, or fail with err. It returns the count of slot dials.
func dialPool(p *Proxy, key poolKey, spares bool, err error) *int {
	n := new(int)
	pl := upstream.NewPool(upstream.PoolConfig{
		Size:   p.opts.Upstream.PoolSize,
		Closed: func() bool { return false },
		Failed: func(error, time.Duration) {},
		Dial: func(spare bool) (*upstream.Conn, error) {
			if spare {
				return &upstream.Conn{}, nil
			}
			*n++
			if err != nil {
				return nil, err
			}
			return &upstream.Conn{}, nil
		},
	})
	if spares {
		pl.OpenSpares()
	}
	p.pools.Put(key, pl)
	return n
}

// routeOnce routes cmd as handle does on s's event loop and returns the
// step it asked for, having checked that route kept the session.
func routeOnce(t *testing.T, s *session, line string) step {
	t.Helper()
	args := argsOf(line)
	k := s.p.cmds().Kind(args[0])
	s.holds = k == commands.Forward && isScriptCall(args[0]) // as handle sets it
	s.asked = step{}
	if !s.route(resp.Command{Args: args, Raw: resp.AppendCommand(nil, args...)}, k) {
		t.Fatalf("%s: route ended the session", line)
	}
	s.holds = false
	return s.asked
}

// TestDialFirst: a command sent on a shared connection the session has
// not dialled asks, on an event loop, for the dial off the loop before
// anything is done for it (the pause, the lock rules, its pool switch):
// nothing is queued; handled again after the dial, it is queued once, and
// not dialled again. A command the proxy answers itself dials nothing.
func TestDialFirst(t *testing.T) {
	for _, c := range []struct {
		cmd   string
		key   func(poolKey) poolKey // the pool it is sent on
		after func(s *session) bool // the switch it made, once handled
	}{
		{"GET a", nil, nil},
		{"INFO server", nil, nil},
		{"XREAD STREAMS s 0", nil, nil},
		{"AUTH a b c", nil, nil}, // arity: Valkey's error
		{"HELLO", nil, nil},
		{"SELECT 1", func(k poolKey) poolKey { k.db = 1; return k }, func(s *session) bool { return s.db == 1 }},
		{"HELLO 3", func(k poolKey) poolKey { k.proto = 3; return k }, func(s *session) bool { return s.proto == 3 }},
		{"CLIENT PAUSE 10", nil, func(s *session) bool { return s.p.pauseWait() > 0 }},
	} {
		t.Run(c.cmd, func(t *testing.T) {
			p := stepProxy()
			s := stepSession(p, false)
			s.outClosed = true // no client socket: the proxy's own replies go nowhere
			key := s.key()
			if c.key != nil {
				openPool(p, key, 0) // the session's own pool is dialled
				key = c.key(key)
			}
			dials := dialPool(p, key, true, nil)
			st := routeOnce(t, s, c.cmd)
			if st.do != stepOffLoop || st.job == nil {
				t.Fatalf("step %d, want a dial off the loop", st.do)
			}
			if len(s.bpend) != 0 || s.inflight.Load() != 0 || (c.after != nil && c.after(s)) {
				t.Fatal("something was done before the dial")
			}
			st.job()
			if st = routeOnce(t, s, c.cmd); st.do != stepNext {
				t.Fatalf("handled again after the dial: step %d", st.do)
			}
			if len(s.bpend) != 1 || *dials != 1 {
				t.Fatalf("handled again: %d queued, %d dials; want 1, 1", len(s.bpend), *dials)
			}
			if c.after != nil && !c.after(s) {
				t.Fatal("the switch was not made")
			}
		})
	}
	for _, cmd := range []string{"CLIENT SETNAME x", "CLIENT ID", "QUIT", "PING"} {
		p := stepProxy()
		s := stepSession(p, false)
		s.outClosed = true
		s.authed = cmd != "PING" // NOAUTH
		dials := dialPool(p, s.key(), true, nil)
		args := argsOf(cmd)
		s.route(resp.Command{Args: args, Raw: resp.AppendCommand(nil, args...)}, p.cmds().Kind(args[0]))
		if s.asked.do != stepNext || *dials != 0 || len(s.bpend) != 0 {
			t.Fatalf("%s, answered by the proxy: step %d, %d dials, %d queued", cmd, s.asked.do, *dials, len(s.bpend))
		}
	}
}

// TestDialFirstFailed: a dial off the loop that Valkey refused (a database
// it does not have), which the pool does not remember, answers the command
// handled again: it is not dialled a second time, and nothing is queued.
func TestDialFirstFailed(t *testing.T) {
	p := stepProxy()
	s := stepSession(p, true)
	s.outClosed = true
	key := s.key()
	key.db = 99
	dials := dialPool(p, key, true, &upstream.ReplyError{Msg: "ERR DB index is out of range"})
	st := routeOnce(t, s, "SELECT 99")
	if st.do != stepOffLoop {
		t.Fatalf("step %d, want a dial off the loop", st.do)
	}
	st.job()
	if st = routeOnce(t, s, "SELECT 99"); st.do != stepNext || *dials != 1 || len(s.bpend) != 0 || s.db != 0 {
		t.Fatalf("handled again: step %d, %d dials, %d queued, db %d", st.do, *dials, len(s.bpend), s.db)
	}
}

// TestHeldFirst: behind its own script call, still unanswered on a spare
// Valkey may hold it on, a session on an event loop handles its next
// command sent on a shared connection, for a busy server or of CLIENT's
// only once the reply is in (stepSettle), before anything is done for it;
// with the reply in, it goes on.
func TestHeldFirst(t *testing.T) {
	for _, cmd := range []string{"GET a", "EVAL x 0", "SCRIPT KILL", "CLIENT SETNAME x", "INFO server"} {
		t.Run(cmd, func(t *testing.T) {
			p := stepProxy()
			s := stepSession(p, true)
			s.outClosed = true
			if st := routeOnce(t, s, "EVAL x 0"); st.do != stepNext {
				t.Fatalf("the script call: step %d", st.do)
			}
			s.flush()
			if !s.behindHeld() || s.inflight.Load() != 1 {
				t.Fatal("the script call is not held on its connection")
			}
			if st := routeOnce(t, s, cmd); st.do != stepSettle {
				t.Fatalf("behind the script call: step %d, want stepSettle", st.do)
			}
			if len(s.bpend) != 0 || s.inflight.Load() != 1 || s.name != "" {
				t.Fatal("something was done before the reply")
			}
			s.inflight.Store(0) // the reply came
			if st := routeOnce(t, s, cmd); st.do == stepSettle {
				t.Fatal("settled again with nothing owed")
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
		if !s.route(resp.Command{Args: args}, p.cmds().Kind(args[0])) {
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

// TestSparesFirst: a script call or CLIENT PAUSE through a pool
// whose spare connections are not open asks, where it is handled, to open
// them off the loop first.
func TestSparesFirst(t *testing.T) {
	p := stepProxy()
	s := stepSession(p, false)
	openPool(p, s.key(), 3)
	for _, cmd := range []string{"EVAL x 0", "FCALL f 0", "CLIENT PAUSE 10"} {
		args := argsOf(cmd)
		k := p.cmds().Kind(args[0])
		s.holds = k == commands.Forward && isScriptCall(args[0]) // as handle sets it
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
