package main

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/lockproxy/lockproxy/internal/libscripts"
	"github.com/lockproxy/lockproxy/rewrite"
	"github.com/redis/go-redis/v9"
)

func main() {
	proxyAddr := flag.String("proxy", "127.0.0.1:6380", "lockproxy address (rules: *:lock rewrite, {*}:mutex fenced with guards {base}:data)")
	directAddr := flag.String("direct", "127.0.0.1:6379", "the Valkey behind it")
	clients := flag.Int("c", 50, "concurrent clients")
	dur := flag.Duration("d", 5*time.Second, "how long each side runs")
	rounds := flag.Int("rounds", 3, "alternating rounds per side; the median is reported")
	mode := flag.String("mode", "release", "release | scripted | transit | fenced | durable | script-acquire | script-hop | script-known | script-unknown | script-fenced | script-fenced-hop")
	only := flag.String("only", "", "run one side only, a or b (for profiling one of them)")
	count := flag.Int("n", 0, "run exactly n operations of the side -only names (default a), one after another on one connection, and stop: for counting what they cost (scripts/callgrind.sh)")
	flag.Parse()
	ctx := context.Background()
	proxy := redis.NewClient(&redis.Options{Addr: *proxyAddr, PoolSize: *clients, Protocol: 2})
	direct := redis.NewClient(&redis.Options{Addr: *directAddr, PoolSize: *clients, Protocol: 2})
	defer proxy.Close()
	defer direct.Close()
	for _, c := range []*redis.Client{proxy, direct} {
		if err := c.Ping(ctx).Err(); err != nil {
			fmt.Fprintln(os.Stderr, "lockbench:", err)
			os.Exit(1)
		}
	}
	var a, b func(ctx context.Context, c *redis.Conn, w int, i int) error
	var an, bn string
	var ac, bc *redis.Client
	switch *mode {
	case "release":
		an, ac, a = "release cycle via proxy (SET NX, DEL)", proxy, blindCycle
		bn, bc, b = "release cycle direct (same scripts)", direct, scriptCycle("lock")
		loadScripts(ctx, direct)
	case "scripted":
		an, ac, a = "release cycle via proxy (SET NX, DEL)", proxy, blindCycle
		// On a key no rule matches, so the proxy only forwards them: the
		// same work for Valkey and the same hop, without lock handling.
		bn, bc, b = "same scripts via proxy (EVALSHA, no rule)", proxy, scriptCycle("mine")
		// Loaded through the proxy, which answers NOSCRIPT to an
		// EVALSHA of a script it has not seen.
		loadScripts(ctx, proxy)
	case "transit":
		// The same two round trips on a key no rule matches: what any
		// command pays for the hop, with nothing of lock handling.
		cycle := func(ctx context.Context, c *redis.Conn, w, i int) error {
			k := fmt.Sprintf("bench:%d:plain", w)
			if err := c.SetNX(ctx, k, "tok", 10*time.Second).Err(); err != nil {
				return err
			}
			return c.Del(ctx, k).Err()
		}
		an, ac, a = "plain cycle via proxy (SET NX, DEL)", proxy, cycle
		bn, bc, b = "plain cycle direct", direct, cycle
	case "script-acquire", "script-hop":
		an, ac, a = "script obtain+release via proxy (wrapped)", proxy, libCycle("lock")
		bn, bc, b = "same scripts direct", direct, libCycle("lock")
		if *mode == "script-hop" {
			// The same scripts on a key no rule matches: forwarded, not
			// wrapped. What the hop alone costs these scripts, so that
			// script-acquire's ratio can be read as hop times wrapper.
			an, a = "same scripts via proxy (no rule)", libCycle("free")
			b = libCycle("free")
		}
		for _, c := range []*redis.Client{proxy, direct} {
			c.ScriptLoad(ctx, obtainLua)
			c.ScriptLoad(ctx, releaseLua)
		}
	case "script-known", "script-unknown":
		// redislock v0.9.4's obtain and release byte for byte: texts
		// lockproxy knows, run as its equivalents (rewrite/known.go);
		// unknown: the same texts with a line more, which no catalogue
		// holds, so every call runs under the monitor.
		ob, rel := libscripts.RedislockObtainExact, libscripts.RedislockRelease
		an = "known script obtain+release via proxy (redislock)"
		if *mode == "script-unknown" {
			ob, rel = ob+"\n-- not a library's text\n", rel+"\n-- not a library's text\n"
			an = "unknown script obtain+release via proxy (monitored)"
		}
		cycle := func(ctx context.Context, c *redis.Conn, w, i int) error {
			return libTextsCycle(ctx, c, fmt.Sprintf("bench:%d:lock", w), ob, rel, w, i)
		}
		ac, a = proxy, cycle
		bn, bc, b = "same scripts direct", direct, cycle
		for _, c := range []*redis.Client{proxy, direct} {
			c.ScriptLoad(ctx, ob)
			c.ScriptLoad(ctx, rel)
		}
	case "script-fenced", "script-fenced-hop":
		write := func(key string) func(ctx context.Context, c *redis.Conn, w, i int) error {
			return func(ctx context.Context, c *redis.Conn, w, i int) error {
				return c.EvalSha(ctx, sha(writeLua), []string{fmt.Sprintf(key, w)}, i).Err()
			}
		}
		an, ac, a = "scripted fenced write via proxy (holder, wrapped)", proxy, write("{b%d}:data")
		bn, bc, b = "same script direct", direct, write("{b%d}:data")
		if *mode == "script-fenced-hop" {
			// The same script on a key no lock guards: forwarded, not
			// wrapped; the hop alone.
			an, a = "same script via proxy (unguarded key)", write("{b%d}:free")
			b = write("{b%d}:free")
		}
		for _, c := range []*redis.Client{proxy, direct} {
			c.ScriptLoad(ctx, writeLua)
		}
	case "durable":
		// A rule with durability: {replicas: 1, timeout: 1s} on "*:dlock"
		// (make bench starts a replica for this mode only): every
		// acquisition waits for the replica's acknowledgement (WAIT).
		an, ac, a = "durable cycle via proxy (SET NX + WAIT 1, DEL)", proxy, cycleOn("dlock")
		bn, bc, b = "release cycle via proxy (SET NX, DEL)", proxy, blindCycle
	case "fenced":
		an, ac, a = "fenced write via proxy (holder, SET guarded key)", proxy, func(ctx context.Context, c *redis.Conn, w, i int) error {
			return c.Set(ctx, fmt.Sprintf("{b%d}:data", w), i, 0).Err()
		}
		bn, bc, b = "plain write via proxy (SET unguarded key)", proxy, func(ctx context.Context, c *redis.Conn, w, i int) error {
			return c.Set(ctx, fmt.Sprintf("plain:%d", w), i, 0).Err()
		}
	default:
		fmt.Fprintln(os.Stderr, "lockbench: -mode is release, scripted, transit, fenced, durable, script-acquire, script-hop, script-known, script-unknown, script-fenced or script-fenced-hop")
		os.Exit(2)
	}
	if *count > 0 {
		c, op := ac, a
		if *only == "b" {
			c, op = bc, b
		}
		conn := c.Conn()
		defer conn.Close()
		// Keys of this run's own (a worker number no other run uses), and
		// for a fenced write, the lock held as run does.
		w := os.Getpid()
		if (*mode == "fenced" || strings.HasPrefix(*mode, "script-fenced")) && *only != "b" {
			if err := conn.SetNX(ctx, fmt.Sprintf("{b%d}:mutex", w), "holder", time.Hour).Err(); err != nil {
				fmt.Fprintln(os.Stderr, "lockbench: acquire:", err)
				os.Exit(1)
			}
		}
		for i := 0; i < *count; i++ {
			if err := op(ctx, conn, w, i); err != nil {
				fmt.Fprintln(os.Stderr, "lockbench:", err)
				os.Exit(1)
			}
		}
		return
	}
	var ra, rb []float64
	for r := 0; r < *rounds; r++ {
		if *only != "b" {
			ra = append(ra, run(ctx, ac, *clients, *dur, a, *mode == "fenced" || strings.HasPrefix(*mode, "script-fenced")))
		}
		if *only != "a" {
			rb = append(rb, run(ctx, bc, *clients, *dur, b, false))
		}
	}
	switch *only {
	case "a":
		fmt.Printf("%s\t%.0f\n", an, median(ra))
		return
	case "b":
		fmt.Printf("%s\t%.0f\n", bn, median(rb))
		return
	}
	ma, mb := median(ra), median(rb)
	fmt.Printf("%s\t%.0f\t%s\t%.0f\tratio\t%.3f\n", an, ma, bn, mb, ma/mb)
}

// The scripts of a client library that takes its locks in Lua
// (bsm/redislock's obtain and release), and a holder's scripted write.
const (
	obtainLua  = libscripts.RedislockObtain
	releaseLua = libscripts.RedislockRelease
	writeLua   = `return redis.call('SET', KEYS[1], ARGV[1])`
)

func sha(body string) string {
	sum := sha1.Sum([]byte(body))
	return hex.EncodeToString(sum[:])
}

// libCycle obtains and releases a lock with the library's own scripts, on
// keys bench:N:suffix.
func libCycle(suffix string) func(context.Context, *redis.Conn, int, int) error {
	return func(ctx context.Context, c *redis.Conn, w, i int) error {
		return libCycleOn(ctx, c, fmt.Sprintf("bench:%d:%s", w, suffix), w, i)
	}
}

func libCycleOn(ctx context.Context, c *redis.Conn, k string, w, i int) error {
	tok := fmt.Sprintf("tok-%d-%d", w, i)
	if err := c.EvalSha(ctx, sha(obtainLua), []string{k}, tok, 0, 10000).Err(); err != nil {
		return err
	}
	n, err := c.EvalSha(ctx, sha(releaseLua), []string{k}, tok).Int64()
	if err == nil && n != 1 {
		err = fmt.Errorf("release deleted %d", n)
	}
	return err
}

// libTextsCycle obtains and releases the lock k with the scripts obtain
// and release (by EVALSHA), as redislock does: its token and the token's
// length, a 10 s lease.
func libTextsCycle(ctx context.Context, c *redis.Conn, k, obtain, release string, w, i int) error {
	tok := fmt.Sprintf("tok-%d-%d", w, i)
	if err := c.EvalSha(ctx, sha(obtain), []string{k}, tok, len(tok), 10000).Err(); err != nil {
		return err
	}
	n, err := c.EvalSha(ctx, sha(release), []string{k}, tok).Int64()
	if err == nil && n != 1 {
		err = fmt.Errorf("release deleted %d", n)
	}
	return err
}

// blindCycle acquires and releases as a client that knows nothing of tokens.
func blindCycle(ctx context.Context, c *redis.Conn, w, i int) error {
	return cycleOn("lock")(ctx, c, w, i)
}

// cycleOn is blindCycle on keys bench:N:suffix.
func cycleOn(suffix string) func(context.Context, *redis.Conn, int, int) error {
	return func(ctx context.Context, c *redis.Conn, w, i int) error {
		k := fmt.Sprintf("bench:%d:%s", w, suffix)
		ok, err := c.SetNX(ctx, k, "tok", 10*time.Second).Result()
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("SET NX %s was not taken", k)
		}
		n, err := c.Del(ctx, k).Result()
		if err == nil && n != 1 {
			err = fmt.Errorf("release deleted %d", n)
		}
		return err
	}
}

// scriptCycle does blindCycle's work as lockproxy does it for that client:
// its acquire script (SET NX, the grant counter and the owner record) and
// its token-checked release script, by EVALSHA, on keys bench:N:suffix,
// with the arguments the proxy sends (owner, keep_lapsed in ms, ...).
func scriptCycle(suffix string) func(context.Context, *redis.Conn, int, int) error {
	return func(ctx context.Context, c *redis.Conn, w, i int) error {
		k := fmt.Sprintf("bench:%d:%s", w, suffix)
		ctr, recs, idx := string(rewrite.CounterKey([]byte(k))), string(rewrite.RecordsKey([]byte(k))), string(rewrite.IndexKey([]byte(k), false))
		if suffix != "lock" {
			// Through the proxy lockproxy's own keys are refused to
			// clients: the same work under names of the benchmark's.
			ctr, recs, idx = "{"+k+"}:bench:grants", "{"+k+"}:bench:owners", "{"+k+"}:bench:index"
		}
		owner := fmt.Sprintf("conn:bench-%d", w)
		reply, err := c.EvalSha(ctx, rewrite.Acquire.SHA, []string{k, ctr, recs}, owner, 600000, "", -1, "", idx, "tok", "NX", "PX", "10000").Slice()
		if err != nil {
			return err
		}
		if g, _ := reply[0].(int64); g == 0 {
			return fmt.Errorf("acquire did not take %s", k)
		}
		out, err := c.EvalSha(ctx, rewrite.Release.SHA, []string{k, ctr, recs}, "DEL", 0, 600000, owner, "rewrite", idx).Slice()
		if err != nil {
			return err
		}
		if n, _ := out[0].(int64); n != 1 {
			err = fmt.Errorf("release deleted %d", n)
		}
		return err
	}
}

func loadScripts(ctx context.Context, c *redis.Client) {
	for _, s := range []*rewrite.Script{rewrite.Acquire, rewrite.Release} {
		if err := c.ScriptLoad(ctx, s.Body).Err(); err != nil {
			fmt.Fprintln(os.Stderr, "lockbench: SCRIPT LOAD:", err)
			os.Exit(1)
		}
	}
}

// run drives fn from clients connections for d and returns operations per
// second. Each worker keeps one connection (as a lock holder would); with
// hold, it first acquires the fenced lock its writes are guarded by.
func run(ctx context.Context, rdb *redis.Client, clients int, d time.Duration, fn func(context.Context, *redis.Conn, int, int) error, hold bool) float64 {
	var wg sync.WaitGroup
	var mu sync.Mutex
	total := 0
	start := make(chan struct{})
	stop := time.Now().Add(d + 50*time.Millisecond)
	for w := 0; w < clients; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			c := rdb.Conn()
			defer c.Close()
			if hold {
				k := fmt.Sprintf("{b%d}:mutex", w)
				c.Del(ctx, k) // from an earlier round: this connection's own grant, if any
				if err := c.SetNX(ctx, k, "holder", time.Hour).Err(); err != nil {
					fmt.Fprintln(os.Stderr, "lockbench: acquire:", err)
					os.Exit(1)
				}
			}
			<-start
			n := 0
			for time.Now().Before(stop) {
				if err := fn(ctx, c, w, n); err != nil {
					fmt.Fprintln(os.Stderr, "lockbench:", err)
					os.Exit(1)
				}
				n++
			}
			if hold {
				c.Del(ctx, fmt.Sprintf("{b%d}:mutex", w))
			}
			mu.Lock()
			total += n
			mu.Unlock()
		}(w)
	}
	t0 := time.Now()
	close(start)
	wg.Wait()
	return float64(total) / time.Since(t0).Seconds()
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s[len(s)/2]
}
