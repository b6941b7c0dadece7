package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/lockproxy/lockproxy/cluster"
	"github.com/lockproxy/lockproxy/internal/libscripts"
	"github.com/lockproxy/lockproxy/resp"
)

// workerConfig is what the driver tells a worker process (as flags).
type workerConfig struct {
	id       int
	addrs    []string // one or more lockproxy instances (or Valkey): commands go to each in turn
	name     string   // CLIENT SETNAME on every connection, when set
	proxied  bool     // tokens from LOCKPROXY FENCE; else INCR on the counter
	cluster  bool     // addrs[0] is a cluster node, and the worker a cluster client
	sentinel bool     // addrs are Sentinels, and the worker a Sentinel client
	locks    int
	lease    time.Duration
	stallP   float64
	until    time.Time
	maxGrant int
	out      string
	seed     uint64
	scripts  bool // a lock library's scripts (obtainLua, writeLua, releaseLua) instead of plain commands
}

// The scripts a worker sends with -scripts: bsm/redislock's obtain (with
// offset 0) and release, and a write of one entry to the resource.
const (
	obtainLua  = libscripts.RedislockObtain
	releaseLua = libscripts.RedislockRelease
	writeLua   = `return redis.call("rpush", KEYS[1], ARGV[1])`
)

// replyWait is how long a worker waits for one reply before it calls it
// lost. It is far above the proxy's reply timeout and the longest SIGSTOP,
// so a reply that merely came late (the worker itself was stopped) is not
// taken for a lost one.
const replyWait = 8 * time.Second

// conn is a plain RESP connection, one command at a time. With a name, it
// sends CLIENT SETNAME first on every connection it opens.
type conn struct {
	addr string
	name string
	nc   net.Conn
	buf  []byte
	f    resp.Framer
}

func (c *conn) close() {
	if c.nc != nil {
		c.nc.Close()
		c.nc = nil
	}
}

// do sends one command and returns its reply, "!cut <err>" when the
// connection is gone (it is then closed, and the next do redials), or
// "!timeout". s and r are the times around the exchange.
func (c *conn) do(args ...string) (reply string, s, r int64) {
	s = time.Now().UnixNano()
	if c.nc == nil {
		if err := c.dial(); err != nil {
			return replyCut + " dial: " + err.Error(), s, time.Now().UnixNano()
		}
	}
	return c.exchange(resp.AppendCommandStrings(nil, args...)), s, time.Now().UnixNano()
}

func (c *conn) dial() error {
	nc, err := net.DialTimeout("tcp", c.addr, 2*time.Second)
	if err != nil {
		return err
	}
	c.nc, c.buf, c.f = nc, c.buf[:0], resp.Framer{}
	if c.name == "" {
		return nil
	}
	if reply := c.exchange(resp.AppendCommandStrings(nil, "CLIENT", "SETNAME", c.name)); reply != "+OK\r\n" {
		c.close()
		return fmt.Errorf("CLIENT SETNAME: %q", reply)
	}
	return nil
}

// exchange writes one encoded command and reads its reply.
func (c *conn) exchange(cmd []byte) string {
	if _, err := c.nc.Write(cmd); err != nil {
		c.close()
		return replyCut + " write: " + err.Error()
	}
	_ = c.nc.SetReadDeadline(time.Now().Add(replyWait))
	chunk := make([]byte, 4096)
	for {
		n, err := c.f.Frame(c.buf)
		if err != nil {
			c.close()
			return replyCut + " unreadable: " + err.Error()
		}
		if n > 0 {
			out := string(c.buf[:n])
			c.buf = append(c.buf[:0], c.buf[n:]...)
			c.f = resp.Framer{}
			if len(out) > 200 {
				out = out[:200]
			}
			return out
		}
		m, err := c.nc.Read(chunk)
		c.buf = append(c.buf, chunk[:m]...)
		if err != nil && m == 0 {
			c.close()
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return replyTimeout
			}
			return replyCut + " read: " + err.Error()
		}
	}
}

// runWorker is the body of a worker process: contend for the locks until
// the deadline, writing every command and reply to cfg.out.
func runWorker(cfg workerConfig) error {
	f, err := os.Create(cfg.out)
	if err != nil {
		return err
	}
	defer f.Close()
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	rng := rand.New(rand.NewPCG(cfg.seed, uint64(cfg.id)))
	// One connection per address; each command goes to the next address in
	// turn, as a client behind a load balancer that spreads its pool.
	var conns []*conn
	for _, a := range cfg.addrs {
		c := &conn{addr: a, name: cfg.name}
		defer c.close()
		conns = append(conns, c)
	}
	turn := 0
	do := func(args ...string) (string, int64, int64) {
		c := conns[turn%len(conns)]
		turn++
		return c.do(args...)
	}
	if cfg.cluster {
		cc := &clusterClient{seed: cfg.addrs[0], name: cfg.name, conns: map[string]*conn{}, slots: map[uint16]string{}}
		defer cc.close()
		do = cc.do
	}
	if cfg.sentinel {
		sc := newSentinelClient(cfg.addrs, cfg.name)
		defer sc.close()
		do = sc.do
	}
	rec := func(op Op) Op {
		op.W = cfg.id
		_ = enc.Encode(op)
		return op
	}
	cmd := func(g int, kind, lock, arg, want string, args ...string) Op {
		reply, s, r := do(args...)
		return rec(Op{G: g, Kind: kind, Lock: lock, Arg: arg, Want: want, Reply: reply, S: s, R: r})
	}
	sleep := func(lo, hi time.Duration) { time.Sleep(lo + time.Duration(rng.Int64N(int64(hi-lo)+1))) }
	leaseMS := cfg.lease.Milliseconds()
	probe := 0

	for g := 0; g < cfg.maxGrant && time.Now().Before(cfg.until); g++ {
		lock := "c" + strconv.Itoa(rng.IntN(cfg.locks))
		key := "{" + lock + "}:lock"
		val := fmt.Sprintf("w%d-g%d", cfg.id, g)
		// Acquire, retrying while the lock is taken.
		var got bool
		for time.Now().Before(cfg.until) {
			acquire := []string{"SET", key, val, "NX", "PX", strconv.FormatInt(leaseMS, 10)}
			if cfg.scripts {
				acquire = []string{"EVAL", obtainLua, "1", key, val, "0", strconv.FormatInt(leaseMS, 10)}
			}
			reply, s, r := do(acquire...)
			rec(Op{G: g, Kind: kindAcquire, Lock: lock, Arg: val, Reply: reply, S: s, R: r, Lease: leaseMS})
			if reply == "+OK\r\n" {
				got = true
				break
			}
			sleep(2*time.Millisecond, 12*time.Millisecond)
		}
		if !got {
			break
		}
		// The fencing token of this grant.
		var tokOp Op
		if cfg.proxied {
			tokOp = cmd(g, kindToken, lock, "", "", "LOCKPROXY", "FENCE", key)
		} else {
			tokOp = cmd(g, kindToken, lock, "", "", "INCR", "{"+lock+"}:fence")
		}
		tok := int64(-1)
		if isInt(tokOp.Reply) {
			tok, _ = strconv.ParseInt(strings.TrimSpace(tokOp.Reply[1:]), 10, 64)
		}
		if tok >= 0 {
			// The critical section: enter, some work, perhaps a stall
			// past the lease, exit — each a write to the resource.
			steps := 1 + rng.IntN(3)
			stallAt := -1
			if rng.Float64() < cfg.stallP {
				stallAt = rng.IntN(steps + 1)
			}
			for i := 0; i <= steps+1; i++ {
				op := "work"
				switch i {
				case 0:
					op = "enter"
				case steps + 1:
					op = "exit"
				}
				if i == stallAt+1 && stallAt >= 0 {
					s := time.Now().UnixNano()
					sleep(cfg.lease*6/5, cfg.lease*5/2)
					rec(Op{G: g, Kind: kindStall, Lock: lock, S: s, R: time.Now().UnixNano()})
				}
				entry := formatEntry(tok, cfg.id, g, op, time.Now().UnixNano())
				if cfg.scripts {
					cmd(g, kindWrite, lock, entry, "", "EVAL", writeLua, "1", "{"+lock+"}:items", entry)
				} else {
					cmd(g, kindWrite, lock, entry, "", "RPUSH", "{"+lock+"}:items", entry)
				}
				if op != "exit" {
					sleep(2*time.Millisecond, 15*time.Millisecond)
				}
			}
		}
		// Routing probes: payloads only this worker could get back.
		probe++
		p := fmt.Sprintf("w%d-p%d-%x", cfg.id, probe, rng.Uint64())
		cmd(g, kindEcho, "", p, "$"+strconv.Itoa(len(p))+"\r\n"+p+"\r\n", "ECHO", p)
		pk := "chaos:w" + strconv.Itoa(cfg.id)
		if set := cmd(g, kindSet, "", p, "", "SET", pk, p); set.Reply == "+OK\r\n" {
			cmd(g, kindGet, "", pk, "$"+strconv.Itoa(len(p))+"\r\n"+p+"\r\n", "GET", pk)
		}
		// The release: a blind DEL, as the seed's client A does (or the
		// library's token-checked script).
		if cfg.scripts {
			cmd(g, kindRelease, lock, val, "", "EVAL", releaseLua, "1", key, val)
		} else {
			cmd(g, kindRelease, lock, val, "", "DEL", key)
		}
		if err := w.Flush(); err != nil {
			return err
		}
		sleep(0, 10*time.Millisecond)
	}
	return w.Flush()
}

// clusterClient is the plain-cluster run's client, as a cluster-aware
// library is: each keyed command goes to the node its slot was last seen
// on, a MOVED is followed and remembered, an ASK followed once after
// ASKING. The reply recorded is the last one; s is the first send.
type clusterClient struct {
	seed, name string
	conns      map[string]*conn
	slots      map[uint16]string
}

func (cc *clusterClient) close() {
	for _, c := range cc.conns {
		c.close()
	}
}

func (cc *clusterClient) conn(addr string) *conn {
	c := cc.conns[addr]
	if c == nil {
		c = &conn{addr: addr, name: cc.name}
		cc.conns[addr] = c
	}
	return c
}

func (cc *clusterClient) do(args ...string) (reply string, s, r int64) {
	addr, slot := cc.seed, uint16(0)
	keyed := len(args) > 1 && !strings.EqualFold(args[0], "ECHO")
	key := 1
	if strings.EqualFold(args[0], "EVAL") {
		key, keyed = 3, len(args) > 3
	}
	if keyed {
		slot = cluster.Slot([]byte(args[key]))
		if a, ok := cc.slots[slot]; ok {
			addr = a
		}
	}
	s = time.Now().UnixNano()
	asking := false
	for range 8 {
		c := cc.conn(addr)
		if asking {
			if reply, _, _ = c.do("ASKING"); reply != "+OK\r\n" {
				return reply, s, time.Now().UnixNano()
			}
		}
		reply, _, r = c.do(args...)
		code := errCode(reply)
		if f := strings.Fields(reply); (code == "MOVED" || code == "ASK") && len(f) == 3 {
			addr, asking = f[2], code == "ASK"
			if code == "MOVED" {
				cc.slots[slot] = addr
			}
			continue
		}
		return reply, s, r
	}
	return reply, s, r
}
