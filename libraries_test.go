package lockproxy_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/lockproxy/lockproxy/proxy"
	"github.com/redis/go-redis/v9"
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
