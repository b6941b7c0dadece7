package e2e_test

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockproxy/lockproxy/cluster"
	"github.com/lockproxy/lockproxy/config"
	"github.com/lockproxy/lockproxy/internal/valkeytest"
	"github.com/lockproxy/lockproxy/proxy"
	"github.com/lockproxy/lockproxy/resp"
)

// Pipelines in front of a cluster: a session sends a pipeline's commands to
// every node they go to without waiting at each switch, and the replies come
// back in the client's order.

// pipelineCmds is a pipeline whose consecutive commands switch between the
// primaries, with replies the proxy makes itself (CLIENT GETNAME, SELECT 1
// refused as a cluster refuses it), lock commands (an acquire and release
// of the session's own lock, a stranger's DEL of a lock another client
// holds), commands split across slots (MGET, DEL) and a fan-out (SCRIPT
// EXISTS) among them. keys has the same number of keys on each primary, in
// the primaries' order; own and held are locks, held taken by another
// client.
func pipelineCmds(keys []string, own, held string) [][]string {
	per := len(keys) / 3
	var cmds [][]string
	for i := range per {
		for p := range 3 {
			k := keys[p*per+i]
			v := "v" + strconv.Itoa(i) + "." + strconv.Itoa(p)
			cmds = append(cmds, []string{"SET", k, v}, []string{"GET", k})
			cmds = append(cmds, []string{"INCR", k + ":n"}, []string{"APPEND", k, "x"})
		}
		switch i % 4 {
		case 0:
			cmds = append(cmds, []string{"CLIENT", "GETNAME"}, []string{"SELECT", "1"})
		case 1:
			cmds = append(cmds, []string{"SET", own, "tok", "NX", "PX", "30000"}, []string{"DEL", held},
				[]string{"GET", own}, []string{"DEL", own})
		case 2:
			cmds = append(cmds, []string{"MGET", keys[i], keys[per+i], keys[2*per+i]},
				[]string{"SCRIPT", "EXISTS", strings.Repeat("0", 40)})
		case 3:
			cmds = append(cmds, []string{"PING"}, []string{"ECHO", "e" + strconv.Itoa(i)},
				[]string{"DEL", keys[i] + ":n", keys[2*per+i] + ":n"})
		}
	}
	return cmds
}

// sendPipeline writes every command in one write and reads their replies.
func sendPipeline(c *raw, cmds [][]string) []string {
	var b []byte
	for _, cmd := range cmds {
		b = resp.AppendCommandStrings(b, cmd...)
	}
	c.send(string(b))
	out := make([]string, len(cmds))
	for i := range cmds {
		out[i] = c.read()
	}
	return out
}

// A pipeline over all three primaries, with local replies, lock commands,
// splits and a fan-out among its commands, gets the replies it gets when
// each command is sent alone (after the one before was answered), in the
// client's order; and each plain command's reply is the bytes its key's
// node gives directly. On each engine.
func TestClusterPipelineOrder(t *testing.T) {
	eachEngine(t, func(t *testing.T, o proxy.Options) {
		opts := rulesOptions(t, rule("rewrite"))
		opts.EventLoops, opts.BusyPoll = o.EventLoops, o.BusyPoll
		e, cl := clusterEnv(t, opts)
		m := slotMap(t, cl)
		const per = 12
		run := func(prefix string, pipelined bool) ([][]string, []string) {
			keys := keysEveryPrimary(m, prefix+":", per)
			own := keysOn(m, m.Primaries[1], prefix+":own:", 1)[0] + ":lock"
			held := keysOn(m, m.Primaries[2], prefix+":held:", 1)[0] + ":lock"
			holder := dialRaw(t, e.addr)
			eq(t, holder.do("SET", held, "theirs", "NX", "PX", "60000"), "+OK\r\n")
			cmds := pipelineCmds(keys, own, held)
			c := dialRaw(t, e.addr)
			var got []string
			if pipelined {
				got = sendPipeline(c, cmds)
			} else {
				for _, cmd := range cmds {
					got = append(got, c.do(cmd...))
				}
			}
			eq(t, holder.do("DEL", held), ":1\r\n")
			return cmds, got
		}
		prefix := strings.ReplaceAll(t.Name(), "/", ".")
		cmds, got := run(prefix+":p", true)
		_, want := run(prefix+":s", false)
		for i := range cmds {
			g, w := got[i], want[i]
			if strings.HasPrefix(g, "-NOTOWNER") && strings.HasPrefix(w, "-NOTOWNER") {
				// The sentence names the key and the client: the
				// stranger's DEL refused, in its place, is the point.
				mustContain(t, g, cmds[i][1])
				continue
			}
			if g != w {
				t.Errorf("reply %d to %q: pipelined %q, alone %q", i, cmds[i], g, w)
			}
		}
		// The plain commands, one key each: what the key's node says.
		replay := map[string]bool{"SET": true, "GET": true, "INCR": true, "APPEND": true}
		keys := keysEveryPrimary(m, prefix+":d:", per)
		mine := map[string]bool{}
		for _, k := range keys {
			mine[k], mine[k+":n"] = true, true
		}
		for i, cmd := range pipelineCmds(keys, "x:lock", "y:lock") {
			if replay[cmd[0]] && mine[cmd[1]] {
				if d := directTo(t, m, cmd[1], cmd...); d != got[i] {
					t.Errorf("reply %d to %q: through the proxy %q, from the node %q", i, cmd, got[i], d)
				}
			}
		}
		mustContain(t, strings.Join(got, ""), "-NOTOWNER") // the stranger's DEL was refused in its place
	})
}

// A pipeline during a slot's migration: its commands on keys of the moving
// slot are answered with ASK (keys moved already) and MOVED (after the
// move), which the proxy follows off the connection's reader; the replies
// still come in the client's order, interleaved with other nodes' replies
// and the proxy's own.
func TestClusterPipelineDuringMigration(t *testing.T) {
	e, cl := clusterEnv(t, rulesOptions(t, rule("rewrite")))
	m := slotMap(t, cl)
	tag := "{pmig}"
	slot := int(cluster.Slot([]byte(tag)))
	srcAddr, _ := m.Primary(uint16(slot))
	var dst *valkeytest.Server
	var others []string
	for _, p := range m.Primaries {
		if p != srcAddr {
			others = append(others, keysOn(m, p, "pmig-other:", 1)[0])
			if dst == nil {
				dst = cl.ByAddr(p)
			}
		}
	}
	w := dialRaw(t, e.addr)
	const n = 30
	for i := range n {
		eq(t, w.do("SET", tag+":k"+strconv.Itoa(i), "0"), "+OK\r\n")
	}
	for j, k := range others {
		eq(t, w.do("SET", k, "o"+strconv.Itoa(j)), "+OK\r\n")
	}
	lock := tag + ":lock"
	holder := dialRaw(t, e.addr)
	eq(t, holder.do("SET", lock, "tok", "NX", "PX", "60000"), "+OK\r\n")
	round := 0
	var mu sync.Mutex
	var failures []string
	traffic := func() {
		mu.Lock()
		defer mu.Unlock()
		round++
		var cmds [][]string
		var want []string
		for i := range n {
			k := tag + ":k" + strconv.Itoa(i)
			o := others[i%len(others)]
			cmds = append(cmds, []string{"INCR", k}, []string{"GET", o}, []string{"CLIENT", "GETNAME"})
			want = append(want, ":"+strconv.Itoa(round)+"\r\n", bulk("o"+strconv.Itoa(i%len(others))), "$-1\r\n")
			if i%10 == 0 {
				cmds = append(cmds, []string{"GET", lock}, []string{"ECHO", k})
				want = append(want, bulk("tok"), bulk(k))
			}
		}
		got := sendPipeline(w, cmds)
		for i := range cmds {
			if got[i] != want[i] {
				failures = append(failures, fmt.Sprintf("round %d reply %d to %q: %q, want %q", round, i, cmds[i], got[i], want[i]))
			}
		}
	}
	migrateUnderTraffic(t, cl, slot, dst, traffic, &failures, w, "a pipeline")
	eq(t, holder.do("DEL", lock), ":1\r\n")
	for i := range n {
		eq(t, w.do("DEL", tag+":k"+strconv.Itoa(i)), ":1\r\n")
	}
	if err := cl.MigrateSlot(slot, cl.ByAddr(srcAddr), nil); err != nil {
		t.Fatal(err)
	}
}

// Replies held for their turn count against client_output_buffer_limit:
// a pipeline whose first command runs long on one node while large replies
// of another node wait behind it gets the client cut off once what is held
// passes the limit, as output it does not read would; below the limit every
// reply comes, in order.
func TestClusterHeldRepliesCountAgainstOutputLimit(t *testing.T) {
	const limit = 1 << 20
	e, cl := clusterEnv(t, proxy.Options{Config: config.Config{ClientOutputBufferLimit: config.Size(limit)}})
	m := slotMap(t, cl)
	slowKey := keysOn(m, m.Primaries[0], "held:slow:", 1)[0]
	bigKey := keysOn(m, m.Primaries[1], "held:big:", 1)[0]
	big := strings.Repeat("b", 600<<10)
	eq(t, directTo(t, m, bigKey, "SET", bigKey, big), "+OK\r\n")
	defer directTo(t, m, bigKey, "DEL", bigKey)
	// Long enough that the other node's replies come while it runs.
	busy := "local i = 0 while i < 5e7 do i = i + 1 end return 1"
	pipeline := func(gets int) [][]string {
		cmds := [][]string{{"EVAL", busy, "1", slowKey}}
		for range gets {
			cmds = append(cmds, []string{"GET", bigKey})
		}
		return append(cmds, []string{"PING"})
	}

	c := dialRaw(t, e.addr)
	got := sendPipeline(c, pipeline(1)) // 600 KiB held: under the limit
	eq(t, got[0], ":1\r\n")
	eq(t, got[1], bulk(big))
	eq(t, got[2], "+PONG\r\n")

	// Over the limit: the script runs until the test kills it (or for
	// 30 s of the node's clock), so the other node's replies are held
	// behind it however slowly this machine gets them there (with a
	// short script, a loaded machine could see it end first, and nothing
	// would be held).
	cut := dialRaw(t, e.addr)
	forever := "local s = tonumber(redis.call('TIME')[1]) while tonumber(redis.call('TIME')[1]) - s < 30 do end return 1"
	var b []byte
	cmds := pipeline(4) // 2.4 MiB held: over it
	cmds[0] = []string{"EVAL", forever, "1", slowKey}
	for _, cmd := range cmds {
		b = resp.AppendCommandStrings(b, cmd...)
	}
	slowNode, _ := m.Primary(cluster.Slot([]byte(slowKey)))
	node := dialRaw(t, slowNode)
	evals := func() int {
		n := 0
		for _, l := range strings.Split(node.do("INFO", "commandstats"), "\n") {
			for _, c := range []string{"cmdstat_eval:calls=", "cmdstat_evalsha:calls="} {
				if rest, ok := strings.CutPrefix(l, c); ok {
					k, _ := strconv.Atoi(strings.SplitN(rest, ",", 2)[0])
					n += k
				}
			}
		}
		return n
	}
	before := evals()
	cut.send(string(b))
	// The script is killed at the end (the node answers SCRIPT KILL once
	// it runs past busy-reply-threshold): a wait, not a timing bound. On
	// a loaded machine the node may not have started it yet (NOTBUSY; in
	// one loaded run lockproxy sent the cut-off client's script more than
	// two minutes late): then again, until it ran (ended, or killed), so
	// that it does not hold the shared cluster busy for the next tests.
	// The 30 s the script runs at most bound what a later start costs.
	defer func() {
		for start := time.Now(); time.Since(start) < 2*time.Minute; time.Sleep(50 * time.Millisecond) {
			node.send("SCRIPT KILL\r\n")
			r, err := node.readErr(2 * time.Minute)
			if err != nil || strings.HasPrefix(r, "+OK") || strings.Contains(r, "NOTBUSY") && evals() > before {
				return
			}
		}
	}()
	// Nothing can be answered before the script's reply, which never
	// comes: the connection must be closed. A read that waits out its
	// (long) deadline means it was not.
	r, err := cut.readErr(2 * time.Minute)
	var ne net.Error
	switch {
	case err == nil:
		t.Fatalf("a reply came while the script ran: %.60q", r)
	case errors.As(err, &ne) && ne.Timeout():
		t.Fatal("not cut off: the 2.4 MiB held behind the script did not count against the 1 MiB limit")
	}
}

// Many clients pipelining over every primary at once share the nodes'
// connections: each still gets its own replies, all of them, in its order.
func TestClusterPipelinesConcurrent(t *testing.T) {
	e, cl := clusterEnv(t, proxy.Options{})
	m := slotMap(t, cl)
	const clients, rounds = 8, 40
	var wg sync.WaitGroup
	errs := make(chan string, clients)
	for ci := range clients {
		keys := keysEveryPrimary(m, "conc:"+strconv.Itoa(ci)+":", 4)
		c := dialRaw(t, e.addr)
		wg.Add(1)
		go func() {
			defer wg.Done()
			var cmds [][]string
			var want []string
			for r := range rounds {
				for _, k := range keys {
					cmds = append(cmds, []string{"INCR", k}, []string{"ECHO", k + "@" + strconv.Itoa(r)})
					want = append(want, ":"+strconv.Itoa(r+1)+"\r\n", bulk(k+"@"+strconv.Itoa(r)))
				}
			}
			var b []byte
			for _, cmd := range cmds {
				b = resp.AppendCommandStrings(b, cmd...)
			}
			if _, err := c.nc.Write(b); err != nil {
				errs <- err.Error()
				return
			}
			for i := range cmds {
				got, err := c.readErr(10 * time.Second)
				if err != nil || got != want[i] {
					errs <- fmt.Sprintf("client %d reply %d to %q: %q %v, want %q", ci, i, cmds[i], got, err, want[i])
					return
				}
			}
			for _, k := range keys {
				if _, err := c.nc.Write(resp.AppendCommandStrings(nil, "DEL", k)); err != nil {
					errs <- err.Error()
					return
				}
				if got, err := c.readErr(10 * time.Second); err != nil || got != ":1\r\n" {
					errs <- fmt.Sprintf("client %d DEL %s: %q %v", ci, k, got, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// A client that sends a pipeline over every primary and half-closes its
// connection gets every reply before the proxy closes, as Valkey would
// answer it: the replies queued for one write per batch are written before
// the session ends.
func TestClusterHalfClosedPipelineGetsEveryReply(t *testing.T) {
	e, cl := clusterEnv(t, proxy.Options{})
	m := slotMap(t, cl)
	keys := keysEveryPrimary(m, "halfclose:", 5)
	for round := range 5 {
		c := dialRaw(t, e.addr)
		var b []byte
		var want strings.Builder
		for i := range 40 {
			for _, k := range keys {
				b = resp.AppendCommandStrings(b, "SET", k, strconv.Itoa(i))
				want.WriteString("+OK\r\n")
			}
		}
		c.send(string(b))
		if err := c.nc.(*net.TCPConn).CloseWrite(); err != nil {
			t.Fatal(err)
		}
		_ = c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		got, err := io.ReadAll(c.nc)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != want.String() {
			t.Fatalf("round %d: %d bytes of replies before the close, want %d", round, len(got), want.Len())
		}
	}
}
