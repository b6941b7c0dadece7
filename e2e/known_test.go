package e2e_test

import (
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockproxy/lockproxy/proxy"
	"github.com/lockproxy/lockproxy/rewrite"
	"github.com/redis/go-redis/v9"
)

// Issue 39, known lock scripts: a lock library's script text, byte for
// byte, runs lockproxy's own equivalent (rewrite/known.go) instead of the
// monitor. Each entry is proved by differential histories: the same
// generated history is run with the library's text straight on Valkey and
// through lockproxy, and must give the same replies and leave the same
// keys (type, value, a lease or none), lockproxy's own keys aside.

const knownRules = "locks:\n  - pattern: \"kn:*\"\n"

// The texts, as the libraries send them (the catalogue's own copies are
// checked against their SHA1s in TestKnownCatalogueSHA).
var (
	knRLObtain  = "\nif redis.call(\"set\", KEYS[1], ARGV[1], \"NX\", \"PX\", ARGV[3]) then return redis.status_reply(\"OK\") end\n\nlocal offset = tonumber(ARGV[2])\nif redis.call(\"getrange\", KEYS[1], 0, offset-1) == string.sub(ARGV[1], 1, offset) then return redis.call(\"set\", KEYS[1], ARGV[1], \"PX\", ARGV[3]) end\n"
	knRLRelease = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`
	knRLRefresh = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("pexpire", KEYS[1], ARGV[2]) else return 0 end`
	knRLPTTL    = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("pttl", KEYS[1]) else return -3 end`
	knRSDelete  = "\n\tif redis.call(\"GET\", KEYS[1]) == ARGV[1] then\n\t\treturn redis.call(\"DEL\", KEYS[1])\n\telse\n\t\treturn 0\n\tend\n"
	knRSDelete2 = "\n\tlocal val = redis.call(\"GET\", KEYS[1])\n\tif val == ARGV[1] then\n\t\treturn redis.call(\"DEL\", KEYS[1])\n\telseif val == false then\n\t\treturn -1\n\telse\n\t\treturn 0\n\tend\n"
	knRSTouch   = "\n\tif redis.call(\"GET\", KEYS[1]) == ARGV[1] then\n\t\treturn redis.call(\"PEXPIRE\", KEYS[1], ARGV[2])\n\telse\n\t\treturn 0\n\tend\n"
	knRSTouchNX = "\n\tif redis.call(\"GET\", KEYS[1]) == ARGV[1] then\n\t\treturn redis.call(\"PEXPIRE\", KEYS[1], ARGV[2])\n\telseif redis.call(\"SET\", KEYS[1], ARGV[1], \"PX\", ARGV[2], \"NX\") then\n\t\treturn 1\n\telse\n\t\treturn 0\n\tend\n"
)

// redislock v0.10.0's texts (obtain.lua, release.lua, refresh.lua,
// pttl.lua), by the SHA1s of the files at the tag: the catalogue's copies.
const (
	knRL10Obtain  = "eb0c00d98f6f33b4262419a509002884540f30be"
	knRL10Release = "9470c810040e272ee6c579d8d4331aaf6332a7b1"
	knRL10Refresh = "5a22d7e8431313862816d4416b5e46dd70fc340d"
	knRL10PTTL    = "66e1084c2d842a7e8c271925aae90219fac4e129"
)

// knText is the catalogue's text whose SHA1 is sha.
func knText(t testing.TB, sha string) string {
	for _, s := range rewrite.KnownTexts() {
		sum := sha1.Sum([]byte(s))
		if hex.EncodeToString(sum[:]) == sha {
			return s
		}
	}
	t.Fatalf("the catalogue holds no text of SHA1 %s", sha)
	return ""
}

func TestKnownCatalogueSHA(t *testing.T) {
	// The SHA1s the libraries name (redsync v4.15+ states them in
	// scripts.go; redislock's computed from its tagged sources).
	want := map[string]string{
		knRLObtain:               "80a1b5f2cfccec3b7119ba7721d2127682b691a7",
		knRLRelease:              "cf0e94b2e9ffc7e04395cf88f7583fc309985910",
		knRLRefresh:              "a7aba3bc5d6e99b3003da8b9d80a63b9f4092ecf",
		knRLPTTL:                 "6484da7d58920897fdc22b7f9afd1a3d47524ea8",
		knRSDelete:               "00583931c4e4d483f6233879c133c71ed5393f9d",
		knRSDelete2:              "e950836ed1e694540c503ef9972b8de518044d3b",
		knRSTouch:                "d75bb8b5bd13532ddedd17762e772346e39b321e",
		knRSTouchNX:              "b6b55c439e02c6f52ffb8be7ec8c0d0ac816ea79",
		knText(t, knRL10Obtain):  knRL10Obtain,
		knText(t, knRL10Release): knRL10Release,
		knText(t, knRL10Refresh): knRL10Refresh,
		knText(t, knRL10PTTL):    knRL10PTTL,
	}
	texts := rewrite.KnownTexts()
	if len(texts) != len(want) {
		t.Fatalf("catalogue holds %d texts, the test knows %d", len(texts), len(want))
	}
	for _, s := range texts {
		sum := sha1.Sum([]byte(s))
		if w, ok := want[s]; !ok || hex.EncodeToString(sum[:]) != w {
			t.Errorf("catalogue text %q: sha1 %x, want %q (known to the test: %v)", s, sum, w, ok)
		}
	}
}

// knActor is one client of a history: its connection (through lockproxy
// or straight to Valkey) and its token.
type knActor struct {
	c     *redis.Client
	token string
}

// knStep is one step of a history.
type knStep struct {
	actor   int    // 0 holder-to-be, 1 stranger
	op      string // the library operation
	key     int    // 0 the lock, 1 a list (wrong type), 2 a hash
	ttl     int    // ms, for obtain/refresh
	evalsha bool   // EVALSHA first (go-redis Script.Run), else EVAL
	fresh   bool   // the actor takes a new token first
}

// knLib is a library under test: its operations, each a function of an
// actor, a key and a step.
type knLib struct {
	name string
	ops  []string
	run  func(a *knActor, key string, s knStep) string
}

func knScript(c *redis.Client, text string, evalsha bool, key string, args ...any) string {
	var v any
	var err error
	if evalsha {
		v, err = redis.NewScript(text).Run(ctx, c, []string{key}, args...).Result()
	} else {
		v, err = c.Eval(ctx, text, []string{key}, args...).Result()
	}
	return knReply(v, err)
}

func knReply(v any, err error) string {
	if err != nil {
		if errors.Is(err, redis.Nil) {
			return "nil"
		}
		return "err " + err.Error()
	}
	if n, ok := v.(int64); ok && n > 0 && n != 1 {
		return "positive" // a PTTL: how much is left differs by run
	}
	return fmt.Sprintf("%T %v", v, v)
}

var knLibs = []knLib{
	{"redislock", []string{"obtain", "obtain", "release", "refresh", "pttl"}, func(a *knActor, key string, s knStep) string {
		switch s.op {
		case "obtain":
			return knScript(a.c, knRLObtain, s.evalsha, key, a.token, len(a.token), s.ttl)
		case "release":
			return knScript(a.c, knRLRelease, s.evalsha, key, a.token)
		case "refresh":
			return knScript(a.c, knRLRefresh, s.evalsha, key, a.token, s.ttl)
		case "pttl":
			return knScript(a.c, knRLPTTL, s.evalsha, key, a.token)
		}
		return ""
	}},
	{"redislock10", []string{"obtain", "obtain", "release", "refresh", "pttl"}, func(a *knActor, key string, s knStep) string {
		switch s.op {
		case "obtain":
			return knScript(a.c, knRL10[0], s.evalsha, key, a.token, len(a.token), s.ttl)
		case "release":
			return knScript(a.c, knRL10[1], s.evalsha, key, a.token)
		case "refresh":
			return knScript(a.c, knRL10[2], s.evalsha, key, a.token, s.ttl)
		case "pttl":
			return knScript(a.c, knRL10[3], s.evalsha, key, a.token)
		}
		return ""
	}},
	{"redsync", []string{"acquire", "acquire", "delete", "delete2", "touch", "touchnx"}, func(a *knActor, key string, s knStep) string {
		switch s.op {
		case "acquire":
			// redsync's plain SET NX PX (conn.SetNX).
			return knReply(a.c.SetNX(ctx, key, a.token, time.Duration(s.ttl)*time.Millisecond).Result())
		case "delete":
			return knScript(a.c, knRSDelete, s.evalsha, key, a.token)
		case "delete2":
			return knScript(a.c, knRSDelete2, s.evalsha, key, a.token)
		case "touch":
			return knScript(a.c, knRSTouch, s.evalsha, key, a.token, s.ttl)
		case "touchnx":
			return knScript(a.c, knRSTouchNX, s.evalsha, key, a.token, s.ttl)
		}
		return ""
	}},
}

// knGen draws a history: steps over holder and stranger, the lock, a list
// and a hash of the same name pattern (wrong type), leases that lapse
// (ttl 1: the step waits until the key is gone), renewals, fresh tokens
// (a stale holder: its lock lapsed and was taken again by another).
func knGen(rng *rand.Rand, lib knLib, n int) []knStep {
	steps := make([]knStep, n)
	for i := range steps {
		s := knStep{actor: rng.Intn(2), op: lib.ops[rng.Intn(len(lib.ops))], evalsha: rng.Intn(2) == 0}
		switch r := rng.Intn(10); {
		case r < 7:
			s.key = 0
		case r < 9:
			s.key = 1
		default:
			s.key = 2
		}
		s.ttl = []int{60000, 30000, 1}[rng.Intn(3)]
		s.fresh = rng.Intn(6) == 0
		steps[i] = s
	}
	return steps
}

// knState is what a key holds, as compared: its type, its value, and
// whether it has a lease (and of a plausible length).
func knState(t *testing.T, c *redis.Client, key string) string {
	t.Helper()
	typ := c.Type(ctx, key).Val()
	var val string
	switch typ {
	case "string":
		val = c.Get(ctx, key).Val()
	case "list":
		val = strings.Join(c.LRange(ctx, key, 0, -1).Val(), ",")
	case "hash":
		val = fmt.Sprint(c.HGetAll(ctx, key).Val())
	}
	pttl := c.PTTL(ctx, key).Val()
	lease := "none"
	switch {
	case pttl > 30*time.Second:
		lease = "long"
	case pttl > 0:
		lease = "short"
	case pttl == -1:
		lease = "persist"
	}
	return typ + " " + val + " " + lease
}

// knRun runs a history with two actors on conns (each its own
// connection), on keys named after base, and returns its trace: each
// step's reply and the keys' state after it.
func knRun(t *testing.T, lib knLib, steps []knStep, direct *redis.Client, conns [2]*redis.Client, base string) []string {
	t.Helper()
	keys := []string{"kn:" + base + ":lock", "kn:" + base + ":list", "kn:" + base + ":hash"}
	direct.Del(ctx, keys...)
	direct.RPush(ctx, keys[1], "a", "b")
	direct.HSet(ctx, keys[2], "f", "v")
	actors := [2]*knActor{{c: conns[0], token: "tokA0"}, {c: conns[1], token: "tokB0"}}
	var trace []string
	for i, s := range steps {
		a := actors[s.actor]
		if s.fresh {
			a.token = fmt.Sprintf("tok%c%d", 'A'+s.actor, i)
		}
		got := lib.run(a, keys[s.key], s)
		if s.ttl == 1 {
			// The lease lapses: wait for the key to go (an event, not a time).
			for tries := 0; ; tries++ {
				if p := direct.PTTL(ctx, keys[s.key]).Val(); p < 0 || p > time.Second {
					break
				}
				if tries > 2000 {
					t.Fatalf("a 1 ms lease on %s did not lapse", keys[s.key])
				}
				time.Sleep(5 * time.Millisecond)
			}
		}
		st := make([]string, len(keys))
		for j, k := range keys {
			st[j] = knState(t, direct, k)
		}
		trace = append(trace, fmt.Sprintf("%d %+v -> %s | %s", i, s, got, strings.Join(st, " ; ")))
	}
	return trace
}

func knSeed(t *testing.T) int64 {
	if s := os.Getenv("KNOWN_SEED"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	return time.Now().UnixNano()
}

// knRL10 are redislock v0.10.0's obtain, release, refresh and pttl.
var knRL10 [4]string

func TestKnownDifferential(t *testing.T) {
	for i, sha := range []string{knRL10Obtain, knRL10Release, knRL10Refresh, knRL10PTTL} {
		knRL10[i] = knText(t, sha)
	}
	e := newEnv(t, withRules(t, knownRules, proxy.Options{}))
	direct := e.direct()
	seed := knSeed(t)
	t.Logf("seed %d (KNOWN_SEED=%d reruns it)", seed, seed)
	for _, lib := range knLibs {
		t.Run(lib.name, func(t *testing.T) {
			rng := rand.New(rand.NewSource(seed))
			for h := 0; h < 12; h++ {
				steps := knGen(rng, lib, 24)
				base := fmt.Sprintf("%s%d", lib.name, h)
				// Odd histories in RESP2, even ones in RESP3.
				proto := func(o *redis.Options) { o.Protocol = 2 + (h+1)%2 }
				d1, d2 := e.client(proto, func(o *redis.Options) { o.Addr = e.srv.Addr }), e.client(proto, func(o *redis.Options) { o.Addr = e.srv.Addr })
				want := knRun(t, lib, steps, direct, [2]*redis.Client{d1, d2}, base)
				// The same key names, cleared: lockproxy's records of
				// earlier histories cannot meet these.
				p1, p2 := e.client(proto), e.client(proto)
				got := knRun(t, lib, steps, direct, [2]*redis.Client{p1, p2}, base)
				for i := range want {
					if got[i] != want[i] {
						t.Fatalf("seed %d history %d diverges at step %d:\n direct: %s\nthrough: %s\nwhole history (direct):\n%s", seed, h, i, want[i], got[i], strings.Join(want, "\n"))
					}
				}
			}
		})
	}
}
