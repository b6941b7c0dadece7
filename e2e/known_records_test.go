package e2e_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/lockproxy/lockproxy/proxy"
	"github.com/lockproxy/lockproxy/rewrite"
)

// Issue 39: an EVALSHA of a known text runs through lockproxy although no
// client sent its body through it (lockproxy knows the text), and SCRIPT
// EXISTS agrees; after SCRIPT FLUSH both answer as Valkey does until the
// body comes again.
func TestKnownEvalshaUnseen(t *testing.T) {
	e := newEnv(t, withRules(t, knownRules, proxy.Options{}))
	a := dialRaw(t, e.addr)
	const release = "cf0e94b2e9ffc7e04395cf88f7583fc309985910" // redislock's luaRelease
	eq(t, a.do("SET", "kn:e:lock", "tok", "NX", "PX", "60000"), "+OK\r\n")
	eq(t, a.do("SCRIPT", "EXISTS", release), "*1\r\n:1\r\n")
	eq(t, a.do("EVALSHA", release, "1", "kn:e:lock", "other"), ":0\r\n")
	eq(t, a.do("EVALSHA", release, "1", "kn:e:lock", "tok"), ":1\r\n")
	eq(t, a.do("SCRIPT", "FLUSH"), "+OK\r\n")
	eq(t, a.do("SCRIPT", "EXISTS", release), "*1\r\n:0\r\n")
	mustContain(t, a.do("EVALSHA", release, "1", "kn:e:lock", "tok"), "-NOSCRIPT")
	eq(t, a.do("SCRIPT", "LOAD", knRLRelease), bulk(release))
	eq(t, a.do("EVALSHA", release, "1", "kn:e:lock", "tok"), ":0\r\n")
}

// The libraries themselves through lockproxy: their scripts run as the
// equivalents (Valkey's script cache holds the equivalent, not the
// monitored text), and leave the records a plain acquisition and release
// leave: the grant, the owner record and its lease, the locks' index.
func TestKnownRecords(t *testing.T) {
	e := newEnv(t, withRules(t, knownRules, proxy.Options{}))
	d := e.direct()
	c := e.client()
	exists := func(text string) bool {
		t.Helper()
		sha := rewrite.KnownEquivalentSHA(text)
		if sha == "" {
			t.Fatalf("no equivalent for %q", text)
		}
		v, err := d.ScriptExists(ctx, sha).Result()
		if err != nil {
			t.Fatal(err)
		}
		return v[0]
	}
	lease := func(lock string) string {
		t.Helper()
		rs := records(t, d, lock)
		if len(rs) != 1 {
			t.Fatalf("records of %s: %v, want one", lock, rs)
		}
		for _, r := range rs {
			return strings.Fields(r)[2]
		}
		return ""
	}

	t.Run("redislock", func(t *testing.T) {
		const lock = "kn:rl:lock"
		l, err := redislock.New(c).Obtain(ctx, lock, 20*time.Second, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !exists(knRLObtain) {
			t.Error("redislock's obtain did not run as its equivalent")
		}
		eq(t, grants(t, d, lock), "1")
		before := lease(lock)
		eq(t, len(recs(t, admin(t, c, "LOCKS", "kn:rl:*"))), 1)
		if err := l.Refresh(ctx, 60*time.Second, nil); err != nil {
			t.Fatal(err)
		}
		if !exists(knRLRefresh) {
			t.Error("redislock's refresh did not run as its equivalent")
		}
		if after := lease(lock); after <= before {
			t.Errorf("the refresh did not move the record's lease end: %s, was %s", after, before)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if !exists(knRLRelease) {
			t.Error("redislock's release did not run as its equivalent")
		}
		eq(t, len(records(t, d, lock)), 0)
		eq(t, len(recs(t, admin(t, c, "LOCKS", "kn:rl:*"))), 0)
	})

	t.Run("redsync", func(t *testing.T) {
		const lock = "kn:rs:lock"
		m := redsync.New(goredis.NewPool(c)).NewMutex(lock, redsync.WithExpiry(20*time.Second), redsync.WithTries(1))
		if err := m.LockContext(ctx); err != nil {
			t.Fatal(err)
		}
		eq(t, grants(t, d, lock), "1")
		before := lease(lock)
		if ok, err := m.ExtendContext(ctx); !ok || err != nil {
			t.Fatalf("extend: %v %v", ok, err)
		}
		if !exists(knRSTouch) {
			t.Error("redsync's touch did not run as its equivalent")
		}
		if after := lease(lock); after < before {
			t.Errorf("the extend moved the record's lease end back: %s, was %s", after, before)
		}
		if ok, err := m.UnlockContext(ctx); !ok || err != nil {
			t.Fatalf("unlock: %v %v", ok, err)
		}
		if !exists(knRSDelete2) {
			t.Error("redsync's delete did not run as its equivalent")
		}
		eq(t, len(records(t, d, lock)), 0)
		eq(t, d.Exists(ctx, lock).Val(), int64(0))
	})
}

// The threat model: a stranger cannot release the holder's lock with the
// known release script without the token, nor by a plain DEL; with the
// token it can (the token is the lock's proof of ownership, as under the
// monitor), and the holder then finds its lock gone.
func TestKnownStranger(t *testing.T) {
	e := newEnv(t, withRules(t, knownRules, proxy.Options{}))
	d := e.direct()
	const lock = "kn:st:lock"
	l, err := redislock.New(e.client()).Obtain(ctx, lock, time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := dialRaw(t, e.addr)
	eq(t, s.do("EVAL", knRLRelease, "1", lock, "guess"), ":0\r\n")
	eq(t, s.do("EVAL", knRSDelete2, "1", lock, "guess"), ":0\r\n")
	eq(t, s.do("EVAL", knRLRefresh, "1", lock, "guess", "1"), ":0\r\n")
	wantCode(t, s.do("DEL", lock), "NOTOWNER")
	eq(t, d.Get(ctx, lock).Val(), l.Token())
	eq(t, s.do("EVAL", knRLRelease, "1", lock, l.Token()), ":1\r\n")
	eq(t, d.Exists(ctx, lock).Val(), int64(0))
	if err := l.Release(ctx); err != redislock.ErrLockNotHeld {
		t.Fatalf("the holder's release after the stranger's: %v, want ErrLockNotHeld", err)
	}
}

// In front of a cluster the equivalents run on the lock's node and keep
// its records there (the records share the lock's slot).
func TestKnownCluster(t *testing.T) {
	e, cl := clusterEnv(t, rulesOptions(t, knownRules))
	m := slotMap(t, cl)
	h, s := dialRaw(t, e.addr), dialRaw(t, e.addr)
	for i := 0; i < 6; i++ {
		k := fmt.Sprintf("kn:cl%d:lock", i)
		tok := "tok" + fmt.Sprint(i)
		eq(t, h.do("EVAL", knRLObtain, "1", k, tok, "3", "60000"), "+OK\r\n")
		eq(t, directTo(t, m, k, "HLEN", "{"+k+"}:lockproxy:owners"), ":1\r\n")
		eq(t, h.do("EVAL", knRLRefresh, "1", k, tok, "90000"), ":1\r\n")
		eq(t, s.do("EVAL", knRSDelete2, "1", k, "other"), ":0\r\n")
		eq(t, directTo(t, m, k, "GET", k), bulk(tok))
		eq(t, h.do("EVAL", knRLRelease, "1", k, tok), ":1\r\n")
		eq(t, directTo(t, m, k, "EXISTS", k, "{"+k+"}:lockproxy:owners"), ":0\r\n")
	}
}

// Inside MULTI a known text runs as its equivalent too, and EXEC's reply
// holds its reply as Valkey's would.
func TestKnownInMulti(t *testing.T) {
	e := newEnv(t, withRules(t, knownRules, proxy.Options{}))
	d := e.direct()
	a := dialRaw(t, e.addr)
	eq(t, a.do("MULTI"), "+OK\r\n")
	eq(t, a.do("EVAL", knRLObtain, "1", "kn:m:lock", "tok", "3", "60000"), "+QUEUED\r\n")
	eq(t, a.do("EVAL", knRSDelete2, "1", "kn:m:lock", "other"), "+QUEUED\r\n")
	eq(t, a.do("EVAL", knRLPTTL, "1", "kn:m:lock", "other"), "+QUEUED\r\n")
	eq(t, a.do("EXEC"), "*3\r\n+OK\r\n:0\r\n:-3\r\n")
	eq(t, len(records(t, d, "kn:m:lock")), 1)
	eq(t, a.do("MULTI"), "+OK\r\n")
	eq(t, a.do("EVAL", knRLRelease, "1", "kn:m:lock", "tok"), "+QUEUED\r\n")
	eq(t, a.do("EVAL", knRSDelete2, "1", "kn:m:lock", "tok"), "+QUEUED\r\n")
	eq(t, a.do("EXEC"), "*2\r\n:1\r\n:-1\r\n")
	eq(t, len(records(t, d, "kn:m:lock")), 0)
}

// redislock's obtain re-takes a lock whose value starts with its token: by
// a client that neither holds the lock nor shows its whole value, that is
// a write lockproxy refuses, in the monitor's words, as it did before the
// equivalent.
func TestKnownObtainRetakeRefused(t *testing.T) {
	e := newEnv(t, withRules(t, knownRules, proxy.Options{}))
	d := e.direct()
	a, b := dialRaw(t, e.addr), dialRaw(t, e.addr)
	eq(t, a.do("EVAL", knRLObtain, "1", "kn:r:lock", "tokA-meta1", "4", "60000"), "+OK\r\n")
	// The holder's fencing token is the grant its obtain got.
	eq(t, a.do("LOCKPROXY", "FENCE", "kn:r:lock"), ":"+grants(t, d, "kn:r:lock")+"\r\n")
	eq(t, b.do("LOCKPROXY", "FENCE", "kn:r:lock"), "$-1\r\n")
	eq(t, a.do("EVAL", knRLObtain, "1", "kn:r:lock", "tokA-meta2", "4", "60000"), "+OK\r\n") // the holder
	eq(t, b.do("EVAL", knRLObtain, "1", "kn:r:lock", "tokA-meta2", "4", "60000"), "+OK\r\n") // the whole value shown
	eq(t, b.do("EVAL", knRLObtain, "1", "kn:r:lock", "tokA-meta3", "4", "60000"),
		"-NOTOWNER lockproxy refused SET of \"kn:r:lock\" inside a script: this client holds no grant of the lock, and the script was not given the lock's token (its value, or a Redisson-style lock's owner field) in ARGV; pass the token in ARGV, as the lock libraries' release scripts do script: 80a1b5f2cfccec3b7119ba7721d2127682b691a7, on @user_script:5.\r\n")
	eq(t, d.Get(ctx, "kn:r:lock").Val(), "tokA-meta2")
}

// A numkeys Valkey does not read as an integer ("01", "+1") is Valkey's
// error through lockproxy too: the call is forwarded as it came, not run
// as an equivalent (nor monitored) with a numkeys re-spelled "1".
func TestKnownNumkeysAsValkeyReadsIt(t *testing.T) {
	e := newEnv(t, withRules(t, knownRules, proxy.Options{}))
	a := dialRaw(t, e.addr)
	eq(t, a.do("SET", "kn:n:lock", "tok", "NX", "PX", "60000"), "+OK\r\n")
	for _, n := range []string{"01", "+1", "00"} {
		eq(t, a.do("EVAL", knRLRelease, n, "kn:n:lock", "tok"), "-ERR value is not an integer or out of range\r\n")
		eq(t, a.do("EVAL", "return redis.call('DEL', KEYS[1])", n, "kn:n:lock"), "-ERR value is not an integer or out of range\r\n")
	}
	eq(t, a.do("EXISTS", "kn:n:lock"), ":1\r\n")
}
