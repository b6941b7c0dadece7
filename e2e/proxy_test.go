package e2e_test

import (
	"crypto/rand"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockproxy/lockproxy/config"
	"github.com/lockproxy/lockproxy/internal/valkeytest"
	"github.com/lockproxy/lockproxy/proxy"
	"github.com/lockproxy/lockproxy/resp"
	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if addr := os.Getenv("LOCKPROXY_PAUSED_HOLDER"); addr != "" {
		pausedHolder(addr) // the helper process of TestPausedHolderProcess
		os.Exit(0)
	}
	// The cluster tests' one cluster (cluster_test.go) stops after them.
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		valkeytest.StopSharedCluster()
		os.Exit(code)
	}))
}

// The basics through go-redis, in both protocols: commands reach Valkey and
// the replies come back unchanged.
func TestForwardGoRedis(t *testing.T) {
	e := newEnv(t, proxy.Options{})
	for _, protocol := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", protocol), func(t *testing.T) {
			c := e.client(func(o *redis.Options) { o.Protocol = protocol })
			k := fmt.Sprintf("k%d", protocol)
			eq(t, c.Set(ctx, k, "v", 0).Val(), "OK")
			eq(t, c.Get(ctx, k).Val(), "v")
			eq(t, c.Incr(ctx, k+"n").Val(), int64(1))
			if err := c.Get(ctx, "missing").Err(); err != redis.Nil {
				t.Fatalf("GET missing: %v, want redis.Nil", err)
			}
			c.HSet(ctx, k+"h", "a", "1", "b", "2")
			eq(t, len(c.HGetAll(ctx, k+"h").Val()), 2)
			err := c.Do(ctx, "NOSUCHCOMMAND", "x").Err()
			if err == nil || !strings.Contains(err.Error(), "unknown command") {
				t.Fatalf("unknown command: %v", err)
			}
			// The connection survives Valkey's error.
			eq(t, c.Ping(ctx).Val(), "PONG")
			eq(t, e.direct().Get(ctx, k).Val(), "v")
		})
	}
}

// A value of 64 MiB of random bytes makes the round trip intact, through the
// proxy's buffers in both directions.
func TestLargeBinaryValue(t *testing.T) {
	e := newEnv(t, proxy.Options{})
	val := make([]byte, 64<<20)
	if _, err := rand.Read(val); err != nil {
		t.Fatal(err)
	}
	val[0], val[1], val[2] = '\r', '\n', 0
	c := e.client(func(o *redis.Options) { o.ReadTimeout = 3 * time.Minute; o.WriteTimeout = 3 * time.Minute })
	if err := c.Set(ctx, "big", val, 0).Err(); err != nil {
		t.Fatal(err)
	}
	got, err := c.Get(ctx, "big").Bytes()
	if err != nil {
		t.Fatal(err)
	}
	eq(t, got, val)
	eq(t, e.direct().StrLen(ctx, "big").Val(), int64(len(val)))
}

// Inline commands, as typed over telnet, work and get RESP replies.
func TestInlineCommands(t *testing.T) {
	e := newEnv(t, proxy.Options{})
	r := dialRaw(t, e.addr)
	r.send("PING\r\n")
	eq(t, r.read(), "+PONG\r\n")
	r.send("SET greeting \"hello world\"\r\n")
	eq(t, r.read(), "+OK\r\n")
	r.send("GET greeting\n")
	eq(t, r.read(), bulk("hello world"))
}

// A pipeline of many commands comes back complete and in order.
func TestPipelineOrder(t *testing.T) {
	e := newEnv(t, proxy.Options{})
	c := e.client()
	const n = 5000
	cmds, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := 0; i < n; i++ {
			p.Set(ctx, fmt.Sprint("p", i), i, 0)
			p.Get(ctx, fmt.Sprint("p", i))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		eq(t, cmds[2*i+1].(*redis.StringCmd).Val(), fmt.Sprint(i))
	}
}

// One write carrying commands of every routing: forwarded ones, ones the
// proxy answers itself (behind a slow script still running in Valkey), and a
// transaction that moves the client onto a dedicated connection halfway.
// Replies come back in command order, under both client engines.
func TestPipelineMixedRouting(t *testing.T) {
	eachEngine(t, func(t *testing.T, o proxy.Options) {
		e := newEnv(t, o)
		r := dialRaw(t, e.addr)
		slow := "local i = 0 while i < 2000000 do i = i + 1 end return i"
		cmds := [][]string{
			{"SET", "m", "1"},
			{"EVAL", slow, "0"},
			{"CLIENT", "SETNAME", "pipe"},
			{"GET", "m"},
			{"CLIENT", "GETNAME"},
			{"MULTI"},
			{"INCR", "m"},
			{"EXEC"},
			{"GET", "m"},
			{"CLIENT", "GETNAME"},
			{"PING"},
		}
		want := []string{
			"+OK\r\n",
			":2000000\r\n",
			"+OK\r\n",
			bulk("1"),
			bulk("pipe"),
			"+OK\r\n",
			"+QUEUED\r\n",
			"*1\r\n:2\r\n",
			bulk("2"),
			bulk("pipe"),
			"+PONG\r\n",
		}
		var batch []byte
		for _, c := range cmds {
			batch = resp.AppendCommandStrings(batch, c...)
		}
		other := dialRaw(t, e.addr)
		r.send(string(batch))
		// Another client is served meanwhile, on the same upstream
		// connection as the first half of the batch.
		eq(t, other.do("SET", "o", "x"), "+OK\r\n")
		for i, w := range want {
			if got := r.read(); got != w {
				t.Fatalf("reply %d to %q: got %q, want %q", i, cmds[i], got, w)
			}
		}
		eq(t, other.do("GET", "o"), bulk("x"))
	})
}

// One write that moves the client between pools (SELECT, HELLO, RESET) and
// asks the proxy about itself (INFO lockproxy), each behind commands still in
// flight: every reply comes back in order, from the right database.
func TestPipelineSwitchesPools(t *testing.T) {
	eachEngine(t, func(t *testing.T, o proxy.Options) {
		e := newEnv(t, o)
		r := dialRaw(t, e.addr)
		slow := "local i = 0 while i < 1000000 do i = i + 1 end return i"
		cmds := [][]string{
			{"SET", "k", "db0"},
			{"EVAL", slow, "0"},
			{"SELECT", "1"},
			{"SET", "k", "db1"},
			{"EVAL", slow, "0"},
			{"HELLO", "3"},
			{"GET", "k"},
			{"EVAL", slow, "0"},
			{"INFO", "lockproxy"},
			{"RESET"},
			{"GET", "k"},
		}
		var batch []byte
		for _, c := range cmds {
			batch = resp.AppendCommandStrings(batch, c...)
		}
		r.send(string(batch))
		eq(t, r.read(), "+OK\r\n")
		eq(t, r.read(), ":1000000\r\n")
		eq(t, r.read(), "+OK\r\n")
		eq(t, r.read(), "+OK\r\n")
		eq(t, r.read(), ":1000000\r\n")
		mustContain(t, r.read(), "proto")
		eq(t, r.read(), bulk("db1"))
		eq(t, r.read(), ":1000000\r\n")
		mustContain(t, r.read(), "lockproxy")
		eq(t, r.read(), "+RESET\r\n")
		eq(t, r.read(), bulk("db0"))
	})
}

// Many clients pipelining at once share upstream connections; each gets its
// own replies, in its own order.
func TestConcurrentClientsGetOwnReplies(t *testing.T) {
	e := newEnv(t, proxy.Options{Config: config.Config{Upstream: config.UpstreamConfig{PoolSize: 2}}})
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for w := 0; w < 40; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			c := e.client(func(o *redis.Options) { o.PoolSize = 2; o.Protocol = 2 + w%2 })
			for round := 0; round < 20; round++ {
				cmds, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
					for i := 0; i < 50; i++ {
						p.Echo(ctx, fmt.Sprintf("w%d-r%d-i%d", w, round, i))
					}
					return nil
				})
				if err != nil {
					errs <- err
					return
				}
				for i, cmd := range cmds {
					want := fmt.Sprintf("w%d-r%d-i%d", w, round, i)
					if got := cmd.(*redis.StringCmd).Val(); got != want {
						errs <- fmt.Errorf("worker %d got %q, want %q", w, got, want)
						return
					}
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func TestMultiExecWatch(t *testing.T) {
	e := newEnv(t, proxy.Options{})
	c := e.client()
	other := e.client()
	// A plain transaction.
	cmds, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, "tx", "1", 0)
		p.Incr(ctx, "tx")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	eq(t, cmds[1].(*redis.IntCmd).Val(), int64(2))

	// WATCH: a write by another client aborts the transaction.
	err = c.Watch(ctx, func(tx *redis.Tx) error {
		if err := other.Set(ctx, "tx", "changed", 0).Err(); err != nil {
			return err
		}
		_, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, "tx", "mine", 0)
			return nil
		})
		return err
	}, "tx")
	if err != redis.TxFailedErr {
		t.Fatalf("WATCH conflict: got %v, want TxFailedErr", err)
	}
	eq(t, c.Get(ctx, "tx").Val(), "changed")

	// DISCARD, on the wire.
	r := dialRaw(t, e.addr)
	eq(t, r.do("MULTI"), "+OK\r\n")
	eq(t, r.do("SET", "tx", "discarded"), "+QUEUED\r\n")
	eq(t, r.do("DISCARD"), "+OK\r\n")
	eq(t, r.do("GET", "tx"), bulk("changed"))
	// A queue-time error makes EXEC abort, as Valkey does.
	eq(t, r.do("MULTI"), "+OK\r\n")
	mustContain(t, r.do("NOSUCHCOMMAND"), "-ERR unknown command")
	mustContain(t, r.do("EXEC"), "-EXECABORT")
}

func TestSelectKeepsDatabasesApart(t *testing.T) {
	e := newEnv(t, proxy.Options{})
	a := dialRaw(t, e.addr)
	b := dialRaw(t, e.addr)
	eq(t, a.do("SELECT", "3"), "+OK\r\n")
	eq(t, a.do("SET", "k", "in3"), "+OK\r\n")
	eq(t, b.do("SET", "k", "in0"), "+OK\r\n")
	eq(t, a.do("GET", "k"), bulk("in3"))
	eq(t, b.do("GET", "k"), bulk("in0"))
	mustContain(t, a.do("SELECT", "99999"), "-ERR DB index is out of range")
	eq(t, a.do("GET", "k"), bulk("in3")) // still in 3 after the failed SELECT
	mustContain(t, a.do("SELECT", "x"), "-ERR value is not an integer")
	d3 := redis.NewClient(&redis.Options{Addr: e.srv.Addr, DB: 3})
	defer d3.Close()
	eq(t, d3.Get(ctx, "k").Val(), "in3")
}

func TestClientNameAndInfo(t *testing.T) {
	e := newEnv(t, proxy.Options{})
	c := e.client(func(o *redis.Options) { o.ClientName = "worker-7" })
	eq(t, c.Do(ctx, "CLIENT", "GETNAME").Val(), "worker-7")
	r := dialRaw(t, e.addr)
	eq(t, r.do("CLIENT", "GETNAME"), "$-1\r\n")
	eq(t, r.do("CLIENT", "SETNAME", "alpha"), "+OK\r\n")
	eq(t, r.do("CLIENT", "GETNAME"), bulk("alpha"))
	eq(t, r.do("CLIENT", "SETNAME", "has space"), "-ERR Client names cannot contain spaces, newlines or special characters.\r\n")
	eq(t, r.do("CLIENT", "SETINFO", "LIB-NAME", "mylib"), "+OK\r\n")
	mustContain(t, r.do("CLIENT", "SETINFO", "BOGUS", "x"), "-ERR Unrecognized option 'BOGUS'")
	// CLIENT ID, INFO and LIST answer about the proxy's own clients: the
	// id is the one CLIENT LIST shows with the client's name and library.
	id := r.do("CLIENT", "ID")
	if !strings.HasPrefix(id, ":") {
		t.Fatalf("CLIENT ID: %q", id)
	}
	list := c.ClientList(ctx).Val()
	mustContain(t, list, "id="+strings.TrimSpace(id[1:])+" ")
	mustContain(t, list, " name=alpha ")
	mustContain(t, list, " name=worker-7 ")
	mustContain(t, r.do("CLIENT", "INFO"), "id="+strings.TrimSpace(id[1:])+" addr="+r.nc.LocalAddr().String()+" ")
	mustContain(t, r.do("CLIENT", "INFO"), " lib-name=mylib ")
	eq(t, r.do("CLIENT", "GETNAME"), bulk("alpha"))
	mustContain(t, r.do("INFO", "lockproxy"), "dedicated_sessions:0\r\n")
}

// HELLO 3 and the handshake go-redis sends (HELLO, CLIENT SETINFO) must not
// cost a dedicated upstream connection: count Valkey's clients.
func TestHandshakeStaysShared(t *testing.T) {
	e := newEnv(t, proxy.Options{Config: config.Config{Upstream: config.UpstreamConfig{PoolSize: 1}}})
	var clients []*redis.Client
	for i := 0; i < 20; i++ {
		c := e.client(func(o *redis.Options) { o.Protocol = 3; o.ClientName = fmt.Sprint("c", i) })
		if err := c.Set(ctx, fmt.Sprint("h", i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
		c.Do(ctx, "SELECT", "0")
		clients = append(clients, c)
	}
	d := e.direct()
	n := strings.Count(d.ClientList(ctx).Val(), "\n")
	// The direct client itself, plus at most the shared pools for RESP2
	// (the probe) and RESP3: far fewer than the 20 clients.
	if n > 4 {
		t.Fatalf("Valkey has %d connections for 20 go-redis clients:\n%s", n, d.ClientList(ctx).Val())
	}
	_ = clients
}

func TestHelloOnTheWire(t *testing.T) {
	e := newEnv(t, proxy.Options{})
	r := dialRaw(t, e.addr)
	h := r.do("HELLO", "3", "SETNAME", "h3")
	if !strings.HasPrefix(h, "%") {
		t.Fatalf("HELLO 3 reply is not a RESP3 map: %q", h)
	}
	eq(t, r.do("CLIENT", "GETNAME"), bulk("h3"))
	eq(t, r.do("GET", "nope"), "_\r\n") // RESP3 null
	mustContain(t, r.do("HELLO", "4"), "-NOPROTO")
	eq(t, r.do("GET", "nope"), "_\r\n")
	h = r.do("HELLO", "2")
	if !strings.HasPrefix(h, "*") {
		t.Fatalf("HELLO 2 reply is not an array: %q", h)
	}
	eq(t, r.do("GET", "nope"), "$-1\r\n")
	mustContain(t, r.do("HELLO", "3", "BOGUS"), "-ERR Syntax error in HELLO option 'BOGUS'")
}

func TestAuthPassword(t *testing.T) {
	e := newEnv(t, proxy.Options{Config: config.Config{Upstream: config.UpstreamConfig{Password: "s3cret"}}}, "requirepass s3cret")
	r := dialRaw(t, e.addr)
	eq(t, r.do("GET", "k"), "-NOAUTH Authentication required.\r\n")
	mustContain(t, r.do("HELLO", "3"), "-NOAUTH HELLO must be called")
	// Valkey checks the version and the options before the login.
	eq(t, r.do("HELLO", "4"), "-NOPROTO unsupported protocol version\r\n")
	eq(t, r.do("HELLO", "3", "SETNAME", "a b"), "-ERR Client names cannot contain spaces, newlines or special characters.\r\n")
	eq(t, r.do("AUTH", "s3cret"), "+OK\r\n")
	eq(t, r.do("SET", "k", "v"), "+OK\r\n")
	// go-redis with the password, and without.
	good := e.client(func(o *redis.Options) { o.Password = "s3cret" })
	eq(t, good.Get(ctx, "k").Val(), "v")
	bad := e.client(func(o *redis.Options) { o.Password = "wrong" })
	err := bad.Get(ctx, "k").Err()
	if err == nil || !strings.Contains(err.Error(), "WRONGPASS") {
		t.Fatalf("wrong password: %v", err)
	}
	none := e.client()
	err = none.Get(ctx, "k").Err()
	if err == nil || !strings.Contains(err.Error(), "NOAUTH") {
		t.Fatalf("no password: %v", err)
	}
}

func TestAuthACLUser(t *testing.T) {
	e := newEnv(t, proxy.Options{})
	d := e.direct()
	if err := d.Do(ctx, "ACL", "SETUSER", "alice", "on", ">apw", "~alice:*", "+@all").Err(); err != nil {
		t.Fatal(err)
	}
	r := dialRaw(t, e.addr)
	mustContain(t, r.do("AUTH", "alice", "nope"), "-WRONGPASS")
	eq(t, r.do("AUTH", "alice", "apw"), "+OK\r\n")
	eq(t, r.do("SET", "alice:k", "1"), "+OK\r\n")
	// Valkey's ACL applies: alice may not touch other keys.
	mustContain(t, r.do("SET", "bob:k", "1"), "-NOPERM")
	mustContain(t, r.do("ACL", "WHOAMI"), "alice")
	c := e.client(func(o *redis.Options) { o.Username = "alice"; o.Password = "apw" })
	eq(t, c.Get(ctx, "alice:k").Val(), "1")
	// A wrong password changes nothing, as in Valkey: still alice.
	mustContain(t, r.do("AUTH", "alice", "nope"), "-WRONGPASS")
	mustContain(t, r.do("ACL", "WHOAMI"), "alice")
	mustContain(t, r.do("SET", "bob:k", "1"), "-NOPERM")
	mustContain(t, r.do("CLIENT", "INFO"), " user=alice ")
	// HELLO 3 AUTH, as go-redis sends it with a user and RESP3.
	h := dialRaw(t, e.addr)
	mustContain(t, h.do("HELLO", "3", "AUTH", "alice", "nope"), "-WRONGPASS")
	mustContain(t, h.do("HELLO", "3", "AUTH", "alice", "apw"), "%")
	eq(t, h.do("GET", "alice:k"), "$1\r\n1\r\n")
	mustContain(t, h.do("SET", "bob:k", "1"), "-NOPERM")
	// RESET logs out: the default user again.
	eq(t, r.do("RESET"), "+RESET\r\n")
	mustContain(t, r.do("ACL", "WHOAMI"), "default")
	eq(t, r.do("SET", "bob:k", "1"), "+OK\r\n")

	// alice's clients share connections logged in as alice (the pool's
	// size of them per protocol), not one each.
	for range 10 {
		a := dialRaw(t, e.addr)
		eq(t, a.do("AUTH", "alice", "apw"), "+OK\r\n")
		eq(t, a.do("GET", "alice:k"), "$1\r\n1\r\n")
	}
	list, err := d.Do(ctx, "CLIENT", "LIST").Text()
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(list, " user=alice "); n > 2*2 {
		t.Errorf("%d upstream connections logged in as alice for 12 clients, want at most 4 (2 per protocol):\n%s", n, list)
	}

	// An AUTH on the client's own connection (after WATCH) is tracked
	// too: CLIENT INFO names alice, and Valkey refuses her other keys.
	w := dialRaw(t, e.addr)
	eq(t, w.do("WATCH", "alice:k"), "+OK\r\n")
	mustContain(t, w.do("AUTH", "alice", "nope"), "-WRONGPASS")
	mustContain(t, w.do("CLIENT", "INFO"), " user=default ")
	eq(t, w.do("AUTH", "alice", "apw"), "+OK\r\n")
	mustContain(t, w.do("CLIENT", "INFO"), " user=alice ")
	mustContain(t, w.do("SET", "bob:k", "1"), "-NOPERM")
}

func TestPubSub(t *testing.T) {
	e := newEnv(t, proxy.Options{})
	pub := e.client()
	for _, protocol := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", protocol), func(t *testing.T) {
			c := e.client(func(o *redis.Options) { o.Protocol = protocol })
			ch := fmt.Sprintf("news%d", protocol)
			sub := c.Subscribe(ctx, ch)
			defer sub.Close()
			if _, err := sub.Receive(ctx); err != nil {
				t.Fatal(err)
			}
			psub := c.PSubscribe(ctx, "pat"+ch+"*")
			defer psub.Close()
			if _, err := psub.Receive(ctx); err != nil {
				t.Fatal(err)
			}
			ssub := c.SSubscribe(ctx, "s"+ch)
			defer ssub.Close()
			if _, err := ssub.Receive(ctx); err != nil {
				t.Fatal(err)
			}
			eq(t, pub.Publish(ctx, ch, "hello").Val(), int64(1))
			eq(t, pub.Publish(ctx, "pat"+ch+"x", "p").Val(), int64(1))
			eq(t, pub.SPublish(ctx, "s"+ch, "s").Val(), int64(1))
			for _, s := range []*redis.PubSub{sub, psub, ssub} {
				msg, err := s.ReceiveMessage(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if msg.Payload != "hello" && msg.Payload != "p" && msg.Payload != "s" {
					t.Fatalf("unexpected message %+v", msg)
				}
			}
			// PING inside a subscription, and unsubscribe.
			if err := sub.Ping(ctx); err != nil {
				t.Fatal(err)
			}
			if err := sub.Unsubscribe(ctx, ch); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A blocked BLPOP holds a dedicated connection; clients on the shared ones go
// on meanwhile.
func TestBlockingCommands(t *testing.T) {
	e := newEnv(t, proxy.Options{Config: config.Config{Upstream: config.UpstreamConfig{PoolSize: 1}}})
	blocker := e.client()
	other := e.client()
	got := make(chan []string, 1)
	go func() { got <- blocker.BLPop(ctx, 5*time.Second, "queue").Val() }()
	for i := 0; i < 100; i++ {
		eq(t, other.Incr(ctx, "counter").Val(), int64(i+1))
	}
	eq(t, other.RPush(ctx, "queue", "job").Val(), int64(1))
	select {
	case v := <-got:
		eq(t, strings.Join(v, ","), "queue,job")
	case <-time.After(5 * time.Second):
		t.Fatal("BLPOP did not return")
	}
	// The others, with timeouts, on the wire.
	r := dialRaw(t, e.addr)
	eq(t, r.do("BLMOVE", "empty", "dst", "LEFT", "RIGHT", "0.05"), "*-1\r\n")
	eq(t, r.do("BZPOPMIN", "emptyz", "0.05"), "*-1\r\n")
	eq(t, r.do("XREAD", "BLOCK", "50", "STREAMS", "s", "$"), "*-1\r\n")
	eq(t, r.do("WAIT", "0", "0"), ":0\r\n")
	other.ZAdd(ctx, "z", redis.Z{Score: 1, Member: "m"})
	eq(t, r.do("BZPOPMIN", "z", "1"), "*3\r\n"+bulk("z")+bulk("m")+bulk("1"))
}

func TestScriptsAndFunctions(t *testing.T) {
	e := newEnv(t, proxy.Options{})
	r := dialRaw(t, e.addr)
	sha := r.do("SCRIPT", "LOAD", "return ARGV[1]")
	sha = strings.Split(sha, "\r\n")[1]
	eq(t, r.do("EVALSHA", sha, "0", "x"), bulk("x"))
	mustContain(t, r.do("EVALSHA", strings.Repeat("0", 40), "0"), "-NOSCRIPT")
	lib := "#!lua name=mylib\nredis.register_function('echo1', function(keys, args) return args[1] end)"
	eq(t, r.do("FUNCTION", "LOAD", lib), bulk("mylib"))
	eq(t, r.do("FCALL", "echo1", "0", "hi"), bulk("hi"))
	eq(t, r.do("EVAL", "return {1,{2,'x'},nil,3}", "0"), "*2\r\n:1\r\n*2\r\n:2\r\n"+bulk("x"))
}

func TestMonitor(t *testing.T) {
	e := newEnv(t, proxy.Options{})
	m := dialRaw(t, e.addr)
	eq(t, m.do("MONITOR"), "+OK\r\n")
	e.client().Set(ctx, "watched", "1", 0)
	for i := 0; i < 10; i++ {
		line := m.read()
		if strings.Contains(line, `"watched"`) {
			return
		}
	}
	t.Fatal("MONITOR did not show the SET")
}

func TestClientTrackingRESP3(t *testing.T) {
	e := newEnv(t, proxy.Options{})
	r := dialRaw(t, e.addr)
	r.do("HELLO", "3")
	eq(t, r.do("CLIENT", "TRACKING", "ON"), "+OK\r\n")
	r.do("GET", "tracked")
	e.client().Set(ctx, "tracked", "new", 0)
	push := r.read()
	if !strings.HasPrefix(push, ">2\r\n") || !strings.Contains(push, "invalidate") {
		t.Fatalf("want an invalidation push, got %q", push)
	}
}

func TestClientReplyOff(t *testing.T) {
	e := newEnv(t, proxy.Options{})
	r := dialRaw(t, e.addr)
	r.send("CLIENT REPLY OFF\r\nSET a 1\r\nSET b 2\r\nCLIENT REPLY ON\r\n")
	eq(t, r.read(), "+OK\r\n") // from REPLY ON
	eq(t, r.do("MGET", "a", "b"), "*2\r\n"+bulk("1")+bulk("2"))
}

// Malformed input gets Valkey's protocol error and a closed connection.
func TestProtocolErrors(t *testing.T) {
	e := newEnv(t, proxy.Options{})
	for _, tc := range []struct{ in, want string }{
		{"*1\r\n$x\r\n", "-ERR Protocol error: invalid bulk length\r\n"},
		{"*abc\r\n", "-ERR Protocol error: invalid multibulk length\r\n"},
		{"*1\r\n+PING\r\n", "-ERR Protocol error: expected '$', got '+'\r\n"},
		{"SET \"unbalanced\r\n", "-ERR Protocol error: unbalanced quotes in request\r\n"},
	} {
		r := dialRaw(t, e.addr)
		r.send("PING\r\n" + tc.in)
		eq(t, r.read(), "+PONG\r\n")
		eq(t, r.read(), tc.want)
		r.expectClosed()
	}
	// The proxy is still fine.
	eq(t, e.client().Ping(ctx).Val(), "PONG")
}

// A client that announces a huge bulk and trickles bytes is cut off at
// proto-max-bulk-len without the proxy allocating what it announced.
func TestBulkLimit(t *testing.T) {
	opts := proxy.Options{}
	opts.ProtoMaxBulkLen = 1 << 20
	opts.ClientQueryBufferLimit = 4 << 20
	e := newEnv(t, opts)
	r := dialRaw(t, e.addr)
	r.send("*2\r\n$3\r\nGET\r\n$2000000000\r\n")
	eq(t, r.read(), "-ERR Protocol error: invalid bulk length\r\n")
	r.expectClosed()
}

func TestMaxClients(t *testing.T) {
	e := newEnv(t, proxy.Options{Config: config.Config{MaxClients: 2}})
	a := dialRaw(t, e.addr)
	b := dialRaw(t, e.addr)
	eq(t, a.do("PING"), "+PONG\r\n")
	eq(t, b.do("PING"), "+PONG\r\n")
	c := dialRaw(t, e.addr)
	eq(t, c.read(), "-ERR max number of clients reached\r\n")
	c.expectClosed()
	a.nc.Close()
	deadline := time.Now().Add(2 * time.Minute)
	for e.p.Clients() > 1 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	d := dialRaw(t, e.addr)
	eq(t, d.do("PING"), "+PONG\r\n")
}

// A client that leaves gives back its dedicated upstream connection.
func TestClientCloseReleasesDedicated(t *testing.T) {
	e := newEnv(t, proxy.Options{})
	d := e.direct()
	before := strings.Count(d.ClientList(ctx).Val(), "\n")
	r := dialRaw(t, e.addr)
	eq(t, r.do("MULTI"), "+OK\r\n")
	eq(t, strings.Count(d.ClientList(ctx).Val(), "\n"), before+1)
	r.nc.Close()
	deadline := time.Now().Add(2 * time.Minute)
	for strings.Count(d.ClientList(ctx).Val(), "\n") != before {
		if time.Now().After(deadline) {
			t.Fatalf("dedicated connection still open:\n%s", d.ClientList(ctx).Val())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Valkey restarts: in-flight commands get an error (never a hang, never
// another client's reply), and the next commands work again.
func TestUpstreamRestart(t *testing.T) {
	e := newEnv(t, proxy.Options{Config: config.Config{Upstream: config.UpstreamConfig{ReconnectBackoff: config.Duration(10 * time.Millisecond)}}})
	c := e.client()
	eq(t, c.Set(ctx, "before", "1", 0).Val(), "OK")
	blocked := dialRaw(t, e.addr)
	blocked.send(string(redisCmd("BLPOP", "never", "0")))
	time.Sleep(100 * time.Millisecond)
	e.srv.Restart(t)
	reply := blocked.read()
	mustContain(t, reply, "-UPSTREAM lockproxy lost this client's own connection")
	blocked.expectClosed()
	var err error
	for i := 0; i < 50; i++ {
		if err = c.Set(ctx, "after", "1", 0).Err(); err == nil {
			break
		}
		if !strings.Contains(err.Error(), "UPSTREAM") {
			t.Fatalf("unexpected error while Valkey restarts: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	eq(t, c.Get(ctx, "after").Val(), "1")
}

func TestDialFailureNamesUpstream(t *testing.T) {
	port := valkeytest.FreePort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	p, err := proxy.New(proxy.Options{Config: config.Config{Upstream: config.UpstreamConfig{Addr: addr}}, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	l := listen(t)
	go p.Serve(l)
	defer p.Close()
	r := dialRaw(t, l.Addr().String())
	got := r.do("PING")
	mustContain(t, got, "-UPSTREAM lockproxy cannot reach Valkey at "+addr)
	// And the connection stays usable.
	mustContain(t, r.do("PING"), "-UPSTREAM")
}

// Shutdown lets a reply in flight arrive before closing.
func TestGracefulShutdown(t *testing.T) {
	e := newEnv(t, proxy.Options{})
	r := dialRaw(t, e.addr)
	r.send(string(redisCmd("DEBUG", "SLEEP", "0.3")))
	time.Sleep(50 * time.Millisecond)
	done := make(chan struct{})
	go func() { e.stopProxy(); close(done) }()
	eq(t, r.read(), "+OK\r\n")
	r.expectClosed()
	<-done
}
