package e2e_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/lockproxy/lockproxy/internal/valkeytest"
	"github.com/lockproxy/lockproxy/proxy"
	"github.com/redis/go-redis/v9"
	"github.com/valkey-io/valkey-go"
	"github.com/valkey-io/valkey-go/valkeylock"
)

// The Go lock libraries applications actually use, driven through the proxy
// with a lock rule over their keys: acquire, extend, release, release after
// the lease ran out (the seed's step 4, from the library's own script), and
// contention. Their scripts are token-checked already, so the proxy must
// pass them through untouched: the libraries see what Valkey would answer,
// and the proxy refuses nothing.

const libraryRule = "locks:\n  - pattern: \"*:lock\"\n    release: rewrite\n"

// libraryEnv is a proxy with libraryRule and a pooled go-redis client
// through it (the libraries take a pool, and pooled clients are what the
// rule's default session must not break for guarded scripts).
func libraryEnv(t *testing.T, o proxy.Options) (*env, *redis.Client) {
	t.Helper()
	opts := rulesOptions(t, libraryRule)
	opts.EventLoops, opts.BusyPoll = o.EventLoops, o.BusyPoll
	e := newEnv(t, opts)
	return e, e.client(func(o *redis.Options) { o.PoolSize = 4 })
}

// expireNow ends key's lease from outside the proxy, as time would, and
// waits until Valkey no longer has it.
func expireNow(t *testing.T, e *env, key string) {
	t.Helper()
	ctx := context.Background()
	d := e.direct()
	if err := d.PExpire(ctx, key, time.Millisecond).Err(); err != nil {
		t.Fatal(err)
	}
	for d.Exists(ctx, key).Val() != 0 {
		time.Sleep(time.Millisecond)
	}
}

// noRefusals: a library's guarded scripts are the proxy's business only to
// pass; any refusal or record of them is a false alarm.
func noRefusals(t *testing.T, e *env) {
	t.Helper()
	for _, ev := range e.p.Events(100) {
		t.Errorf("unexpected lock event for a library's own script: %+v", ev)
	}
}

func TestRedsyncThroughProxy(t *testing.T) {
	eachEngine(t, func(t *testing.T, o proxy.Options) {
		e, c := libraryEnv(t, o)
		ctx := context.Background()
		d := e.direct()
		rs := redsync.New(goredis.NewPool(c))
		const key = "orders:42:lock"

		// Acquire: Valkey holds the mutex's own value.
		a := rs.NewMutex(key, redsync.WithExpiry(10*time.Second), redsync.WithTries(1))
		if err := a.LockContext(ctx); err != nil {
			t.Fatalf("acquire: %v", err)
		}
		if got := d.Get(ctx, key).Val(); got != a.Value() {
			t.Fatalf("Valkey holds %q, want the mutex's value %q", got, a.Value())
		}

		// Contention: a second mutex on the same name is turned away and
		// the first one's value stands.
		b := rs.NewMutex(key, redsync.WithExpiry(10*time.Second), redsync.WithTries(1))
		var taken *redsync.ErrTaken
		if err := b.LockContext(ctx); !errors.As(err, &taken) {
			t.Fatalf("second mutex: %v, want ErrTaken", err)
		}
		if got := d.Get(ctx, key).Val(); got != a.Value() {
			t.Fatalf("after contention Valkey holds %q, want %q", got, a.Value())
		}

		// Extend: shorten the lease from outside, then the extension must
		// bring it back to the mutex's 10 s.
		d.PExpire(ctx, key, 5*time.Second)
		if ok, err := a.ExtendContext(ctx); !ok || err != nil {
			t.Fatalf("extend: %v %v", ok, err)
		}
		if ttl := d.PTTL(ctx, key).Val(); ttl <= 5*time.Second {
			t.Fatalf("PTTL after extend %v, want more than the 5s it was cut to", ttl)
		}

		// Release: the key is gone.
		if ok, err := a.UnlockContext(ctx); !ok || err != nil {
			t.Fatalf("release: %v %v", ok, err)
		}
		if n := d.Exists(ctx, key).Val(); n != 0 {
			t.Fatal("the key survived the release")
		}

		// Release after expiry: A's lease ends, B takes the lock, A's late
		// release must not delete B's.
		if err := a.LockContext(ctx); err != nil {
			t.Fatalf("re-acquire: %v", err)
		}
		expireNow(t, e, key)
		if err := b.LockContext(ctx); err != nil {
			t.Fatalf("B after A's lease ended: %v", err)
		}
		if ok, err := a.UnlockContext(ctx); ok {
			t.Fatalf("A's late release reported success (%v)", err)
		}
		if got := d.Get(ctx, key).Val(); got != b.Value() {
			t.Fatalf("after A's late release Valkey holds %q, want B's %q", got, b.Value())
		}
		if ok, err := b.UnlockContext(ctx); !ok || err != nil {
			t.Fatalf("B's release: %v %v", ok, err)
		}
		noRefusals(t, e)
	})
}

func TestRedislockThroughProxy(t *testing.T) {
	eachEngine(t, func(t *testing.T, o proxy.Options) {
		e, c := libraryEnv(t, o)
		ctx := context.Background()
		d := e.direct()
		locker := redislock.New(c)
		const key = "invoice:7:lock"

		// Acquire.
		a, err := locker.Obtain(ctx, key, 10*time.Second, nil)
		if err != nil {
			t.Fatalf("obtain: %v", err)
		}
		if got := d.Get(ctx, key).Val(); got != a.Token() {
			t.Fatalf("Valkey holds %q, want the lock's token %q", got, a.Token())
		}

		// Contention.
		if _, err := locker.Obtain(ctx, key, 10*time.Second, nil); !errors.Is(err, redislock.ErrNotObtained) {
			t.Fatalf("second obtain: %v, want ErrNotObtained", err)
		}
		if got := d.Get(ctx, key).Val(); got != a.Token() {
			t.Fatalf("after contention Valkey holds %q, want %q", got, a.Token())
		}

		// Extend.
		if err := a.Refresh(ctx, 20*time.Second, nil); err != nil {
			t.Fatalf("refresh: %v", err)
		}
		if ttl := d.PTTL(ctx, key).Val(); ttl <= 10*time.Second {
			t.Fatalf("PTTL after refresh %v, want more than the 10s it had", ttl)
		}
		if ttl, err := a.TTL(ctx); err != nil || ttl <= 10*time.Second {
			t.Fatalf("the library's own TTL after refresh: %v %v", ttl, err)
		}

		// Release.
		if err := a.Release(ctx); err != nil {
			t.Fatalf("release: %v", err)
		}
		if n := d.Exists(ctx, key).Val(); n != 0 {
			t.Fatal("the key survived the release")
		}
		if err := a.Release(ctx); !errors.Is(err, redislock.ErrLockNotHeld) {
			t.Fatalf("second release: %v, want ErrLockNotHeld", err)
		}

		// Release after expiry: B holds the lock when A's late release
		// arrives; B's lock stands, and A's refresh fails too.
		if a, err = locker.Obtain(ctx, key, 10*time.Second, nil); err != nil {
			t.Fatalf("re-obtain: %v", err)
		}
		expireNow(t, e, key)
		b, err := locker.Obtain(ctx, key, 10*time.Second, nil)
		if err != nil {
			t.Fatalf("B after A's lease ended: %v", err)
		}
		if err := a.Release(ctx); !errors.Is(err, redislock.ErrLockNotHeld) {
			t.Fatalf("A's late release: %v, want ErrLockNotHeld", err)
		}
		if err := a.Refresh(ctx, time.Second, nil); !errors.Is(err, redislock.ErrNotObtained) {
			t.Fatalf("A's late refresh: %v, want ErrNotObtained", err)
		}
		if got := d.Get(ctx, key).Val(); got != b.Token() {
			t.Fatalf("after A's late release Valkey holds %q, want B's %q", got, b.Token())
		}
		if err := b.Release(ctx); err != nil {
			t.Fatalf("B's release: %v", err)
		}
		noRefusals(t, e)
	})
}

// valkeyGoEnv is a proxy with libraryRule in front of one primary or of the
// shared cluster (hidden face), and a way to ask a key's server directly.
func valkeyGoEnv(t *testing.T, mode string) (*env, func(key string, args ...string) string) {
	t.Helper()
	opts := rulesOptions(t, libraryRule)
	if mode == "one-primary" {
		e := newEnv(t, opts)
		return e, func(_ string, args ...string) string {
			return string(valkeytest.Dial(t, e.srv.Addr, 2).Do(t, args...))
		}
	}
	e, cl := clusterEnv(t, opts)
	m := slotMap(t, cl)
	return e, func(key string, args ...string) string { return directTo(t, m, key, args...) }
}

func valkeyGoClient(t *testing.T, addr string) valkey.Client {
	t.Helper()
	c, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{addr}})
	if err != nil {
		t.Fatalf("valkey-go: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

// valkey-go, the official Go client, turns client-side caching on by
// default (CLIENT TRACKING ON OPTIN on its connection). Through the proxy,
// in front of one primary and behind a cluster's hidden face: SET NX PX on
// lock keys of every slot the test picks, contention, and DoCache reads
// that are served from its cache until a change made elsewhere reaches it.
// On 99745c9 the cluster's SET NX PX on a second node got CROSSSLOT.
func TestValkeyGoThroughProxy(t *testing.T) {
	for _, mode := range []string{"one-primary", "cluster"} {
		t.Run(mode, func(t *testing.T) {
			e, direct := valkeyGoEnv(t, mode)
			c := valkeyGoClient(t, e.addr)
			ctx := context.Background()
			var keys []string
			for i := range 12 { // spread over the slots, so over every primary
				keys = append(keys, "vg:"+mode+":"+strconv.Itoa(i)+":lock")
			}
			for _, k := range keys {
				if v, err := c.Do(ctx, c.B().Set().Key(k).Value("token-"+k).Nx().Px(time.Minute).Build()).ToString(); err != nil || v != "OK" {
					t.Fatalf("SET %s NX PX: %q %v", k, v, err)
				}
				if err := c.Do(ctx, c.B().Set().Key(k).Value("other").Nx().Px(time.Minute).Build()).Error(); !valkey.IsValkeyNil(err) {
					t.Fatalf("second SET %s NX PX: %v, want nil", k, err)
				}
				eq(t, direct(k, "GET", k), bulk("token-"+k))
			}
			data := make([]string, len(keys))
			for i := range keys {
				data[i] = "vg:" + mode + ":data:" + strconv.Itoa(i)
				eq(t, direct(data[i], "SET", data[i], "v1"), "+OK\r\n")
			}
			for _, k := range data {
				r := c.DoCache(ctx, c.B().Get().Key(k).Cache(), time.Minute)
				if v, err := r.ToString(); err != nil || v != "v1" || r.IsCacheHit() {
					t.Fatalf("first DoCache GET %s: %q %v hit=%v", k, v, err, r.IsCacheHit())
				}
				r = c.DoCache(ctx, c.B().Get().Key(k).Cache(), time.Minute)
				if v, err := r.ToString(); err != nil || v != "v1" || !r.IsCacheHit() {
					t.Fatalf("second DoCache GET %s: %q %v hit=%v, want a cache hit", k, v, err, r.IsCacheHit())
				}
			}
			for _, k := range data {
				eq(t, direct(k, "SET", k, "v2"), "+OK\r\n")
			}
			// Each change's invalidation reaches the client; until it
			// does, the cache answers v1. (A guard, not a timing
			// bound: the invalidations come within milliseconds.)
			for _, k := range data {
				for start := time.Now(); ; time.Sleep(time.Millisecond) {
					v, err := c.DoCache(ctx, c.B().Get().Key(k).Cache(), time.Minute).ToString()
					if err != nil {
						t.Fatalf("DoCache GET %s: %v", k, err)
					}
					if v == "v2" {
						break
					}
					if time.Since(start) > time.Minute {
						t.Fatalf("DoCache GET %s still %q a minute after the change: no invalidation came", k, v)
					}
				}
			}
			noRefusals(t, e)
		})
	}
}

// valkeylock, valkey-go's lock: three keys per lock name (valkeylock:N:name,
// in three slots), its own acquire, extend and release scripts, and a waiter
// that wakes only when an invalidation tells it the keys changed. Through
// the proxy, in front of one primary and behind a cluster's hidden face.
func TestValkeylockThroughProxy(t *testing.T) {
	for _, mode := range []string{"one-primary", "cluster"} {
		t.Run(mode, func(t *testing.T) {
			e, direct := valkeyGoEnv(t, mode)
			newLocker := func() valkeylock.Locker {
				l, err := valkeylock.NewLocker(valkeylock.LockerOption{
					ClientOption: valkey.ClientOption{InitAddress: []string{e.addr}},
					KeyValidity:  30 * time.Second,
				})
				if err != nil {
					t.Fatalf("valkeylock: %v", err)
				}
				t.Cleanup(l.Close)
				return l
			}
			a, b := newLocker(), newLocker()
			// A guard, not a timing bound: valkeylock retries until its
			// context ends, so a lock it can never take must not hang.
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			name := "vl:" + mode + ":lock"
			keys := []string{"valkeylock:0:" + name, "valkeylock:1:" + name, "valkeylock:2:" + name}

			// Acquire: the majority of the keys (all three here) hold
			// the lock's value.
			actx, release, err := a.WithContext(ctx, name)
			if err != nil {
				t.Fatalf("acquire: %v", err)
			}
			held := 0
			for _, k := range keys {
				if strings.HasPrefix(direct(k, "GET", k), "$") && direct(k, "GET", k) != "$-1\r\n" {
					held++
				}
			}
			if held < 2 {
				t.Fatalf("after acquiring, %d of the lock's keys are set", held)
			}

			// Contention: B is turned away while A holds it.
			if _, _, err := b.TryWithContext(ctx, name); !errors.Is(err, valkeylock.ErrNotLocked) {
				t.Fatalf("B's try: %v, want ErrNotLocked", err)
			}

			// A waiter: B blocks until A's release reaches it as an
			// invalidation (valkeylock does not poll).
			got := make(chan error, 1)
			var bctx context.Context
			var bcancel context.CancelFunc
			go func() {
				var err error
				bctx, bcancel, err = b.WithContext(ctx, name)
				got <- err
			}()
			release()
			if actx.Err() == nil {
				t.Fatal("A's context still live after its release")
			}
			select {
			case err := <-got:
				if err != nil {
					t.Fatalf("B waiting for the lock: %v", err)
				}
			case <-time.After(time.Minute):
				// The keys' validity is 30 s: without an invalidation B
				// waits for good (a guard, not a timing bound).
				t.Fatal("B still waiting a minute after A's release: no invalidation reached it")
			}
			if bctx.Err() != nil {
				t.Fatalf("B's context: %v", bctx.Err())
			}
			bcancel()
			for _, k := range keys {
				eq(t, direct(k, "EXISTS", k), ":0\r\n")
			}
			noRefusals(t, e)
		})
	}
}
