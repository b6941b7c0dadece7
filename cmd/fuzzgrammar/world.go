package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"time"

	"github.com/lockproxy/lockproxy/internal/valkeytest"
	"github.com/redis/go-redis/v9"
)

// The standalone world: one valkey-server, lockproxy in front of it, and
// in each of two databases a held string lock, a held Redisson-style hash
// lock and a fenced resource, all taken by a victim connection through
// lockproxy that stays open, plus plain keys anyone may change.
var worldDBs = []int{0, 2}

const (
	stringLock = "v:lock"
	hashLock   = "rw:lock"
	mutex      = "{o}:mutex"
	guarded    = "{o}:data"
	fence      = "{o}:fence"
	lease      = "600000"
)

// Per database: the string lock's token and the hash lock's owner field
// (Redisson's uuid:threadId), the only strings that let a caller change
// that lock (the documented "passes the lock's token").
func stringToken(db int) string { return fmt.Sprintf("victimtoken-db%d", db) }
func ownerField(db int) string {
	return fmt.Sprintf("8743c9c0-0795-4907-87fd-6c719a6b458%d:1", db)
}

// redissonWriteLock is Redisson's write-lock acquisition (RedissonWriteLock):
// a hash with the field mode and the owner's field.
const redissonWriteLock = `if (redis.call('exists', KEYS[1]) == 0) then
  redis.call('hset', KEYS[1], 'mode', 'write');
  redis.call('hset', KEYS[1], ARGV[2], 1);
  redis.call('pexpire', KEYS[1], ARGV[1]);
  return nil;
end;
return redis.call('pttl', KEYS[1]);`

// fzLibrary is the library every FCALL of a line goes through: it makes
// the line's call, loaded through lockproxy (so it carries the monitor).
const fzLibrary = "#!lua name=fzlib\nredis.register_function('fzcall', function(keys, args) return redis.call(unpack(args)) end)"

// evalBody is the script every EVAL of a line runs: the call is the line.
const evalBody = "return redis.call(unpack(ARGV))"

type world struct {
	dir    string
	srv    *valkeytest.Server
	lp     *lockproxy
	direct map[int]*redis.Client
	holder *redis.Client // holderDB, emptied after each line sent there
	victim *rawConn
	base   *snapshot
	libs   bool // whether the last line could have loaded a library
}

func newWorld() (*world, error) {
	dir, err := os.MkdirTemp("", "fuzzgrammar-world-")
	if err != nil {
		return nil, err
	}
	w := &world{dir: dir, direct: map[int]*redis.Client{}}
	if w.srv, err = valkeytest.Launch(dir); err != nil {
		return nil, err
	}
	if w.lp, err = startProxy(w.srv.Addr, nil); err != nil {
		return nil, err
	}
	w.dial()
	return w, w.build()
}

func (w *world) dial() {
	if w.holder != nil {
		w.holder.Close()
	}
	w.holder = redis.NewClient(&redis.Options{Addr: w.srv.Addr, DB: holderDB, Protocol: 2, ReadTimeout: 5 * time.Second, MaxRetries: 1, PoolSize: 1})
	for _, db := range worldDBs {
		if c := w.direct[db]; c != nil {
			c.Close()
		}
		w.direct[db] = redis.NewClient(&redis.Options{Addr: w.srv.Addr, DB: db, Protocol: 2,
			ReadTimeout: 5 * time.Second, MaxRetries: 1, PoolSize: 2})
	}
}

func (w *world) close() {
	if w.victim != nil {
		w.victim.close()
	}
	for _, c := range w.direct {
		c.Close()
	}
	w.lp.stop()
	w.srv.Stop()
	os.RemoveAll(w.dir)
}

// build makes the world from an empty server: the victim's locks through
// lockproxy, plain keys directly, lockproxy's library; then checks that
// it is armed (a stranger's DEL of the lock is refused) and reads the
// baseline.
func (w *world) build() error {
	if w.victim != nil {
		w.victim.close()
		w.victim = nil
	}
	d := w.direct[0]
	if err := d.FlushAll(ctx).Err(); err != nil {
		return fmt.Errorf("FLUSHALL: %v", err)
	}
	if err := d.FunctionFlush(ctx).Err(); err != nil {
		return fmt.Errorf("FUNCTION FLUSH: %v", err)
	}
	if err := waitReady(w.lp.addr); err != nil {
		return err
	}
	v, err := dialRaw(w.lp.addr)
	if err != nil {
		return err
	}
	w.victim = v
	for _, db := range worldDBs {
		for _, step := range [][]string{
			{"SELECT", fmt.Sprint(db)},
			{"SET", stringLock, stringToken(db), "NX", "PX", lease},
			{"EVAL", redissonWriteLock, "1", hashLock, lease, ownerField(db)},
			{"SET", mutex, fmt.Sprintf("mutextoken-db%d", db), "NX", "PX", lease},
			{"SET", guarded, fmt.Sprintf("data-db%d", db)},
		} {
			r, err := v.do(step...)
			if err != nil || isError(r) {
				return fmt.Errorf("victim %q: %q %v", step[:2], r, err)
			}
		}
		c := w.direct[db]
		for _, cmd := range [][]any{
			{"SET", "plain:str", "s"}, {"HSET", "plain:hash", "f", "v"}, {"RPUSH", "plain:list", "a", "b"},
			{"SADD", "plain:set", "a"}, {"ZADD", "plain:zset", "1", "a"}, {"XADD", "plain:stream", "1-1", "f", "v"},
		} {
			if err := c.Do(ctx, cmd...).Err(); err != nil {
				return fmt.Errorf("plain key %v: %v", cmd, err)
			}
		}
	}
	if err := w.loadLibrary(); err != nil {
		return err
	}
	if err := w.armed(); err != nil {
		return err
	}
	var err2 error
	w.base, err2 = w.read(true)
	return err2
}

func (w *world) loadLibrary() error {
	c, err := dialRaw(w.lp.addr)
	if err != nil {
		return err
	}
	defer c.close()
	r, err := c.do("FUNCTION", "LOAD", "REPLACE", fzLibrary)
	if err != nil || string(r) != "$5\r\nfzlib\r\n" {
		return fmt.Errorf("FUNCTION LOAD of fzlib through lockproxy: %q %v", r, err)
	}
	return nil
}

// armed checks that the world protects what it holds: a stranger's plain
// DEL of the string lock is refused and the lock stays, and the victim's
// acquisitions left owner records.
func (w *world) armed() error {
	c, err := dialRaw(w.lp.addr)
	if err != nil {
		return err
	}
	defer c.close()
	r, err := c.do("DEL", stringLock)
	if err != nil || !isError(r) {
		return fmt.Errorf("world not armed: a stranger's DEL %s through lockproxy answered %q %v", stringLock, r, err)
	}
	if w.direct[0].Get(ctx, stringLock).Val() != stringToken(0) {
		return fmt.Errorf("world not armed: %s is gone", stringLock)
	}
	for _, k := range []string{stringLock, hashLock, mutex} {
		n, err := w.direct[0].Keys(ctx, "*"+k+"*lockproxy*").Result()
		if err != nil || len(n) == 0 {
			return fmt.Errorf("world not armed: no owner records of %s (%v)", k, err)
		}
	}
	return nil
}

// read is the world as the direct connections see it. withLibs also
// reads the function libraries (only lines of FUNCTION can change them).
func (w *world) read(withLibs bool) (*snapshot, error) {
	s := &snapshot{at: time.Now(), keys: map[string]keyState{}, global: map[string]string{}}
	for _, db := range worldDBs {
		if err := readKeys(w.direct[db], db, []string{stringLock, hashLock, mutex, guarded, fence},
			[]string{"*lockproxy*", "{o}:*"}, s.keys); err != nil {
			return nil, err
		}
	}
	if err := readGlobal(w.direct[0], s.global); err != nil {
		return nil, err
	}
	if withLibs {
		bad, err := unmonitoredLibraries(w.direct[0])
		if err != nil {
			return nil, err
		}
		s.global["libraries without lockproxy's monitor"] = bad
	}
	return s, nil
}

// restore rebuilds the world after a line changed it: a server that
// died, or whose configuration, users or role changed, is restarted
// (its configuration file is the original); otherwise FLUSHALL.
func (w *world) restore(restart bool) error {
	if !restart {
		if err := w.direct[0].Ping(ctx).Err(); err != nil {
			restart = true
		}
	}
	if restart {
		if err := w.srv.Relaunch(); err != nil {
			return err
		}
		w.dial()
	} else {
		_ = w.direct[0].Do(ctx, "CLIENT", "UNPAUSE").Err()
	}
	err := w.build()
	if err != nil && !restart {
		return w.restore(true)
	}
	return err
}

func (w *world) name() string        { return "standalone" }
func (w *world) proxyAddr() string   { return w.lp.addr }
func (w *world) port() int           { return w.srv.Port }
func (w *world) baseline() *snapshot { return w.base }
func (w *world) strangerDB(rng *rand.Rand) int {
	return []int{worldDBs[0], worldDBs[1], holderDB}[rng.IntN(3)]
}
func (w *world) stat(name string) (cmdStat, error) { return readStat(w.direct[0], name) }

func (w *world) afterSend(db int) {
	if db == holderDB {
		_ = w.holder.FlushDB(ctx).Err()
	}
}

// allowed are the locks a line may change because it passes their
// token (a string lock's value, a hash lock's owner field).
func (w *world) allowed(args []string) map[string]bool {
	a := map[string]bool{}
	for _, db := range worldDBs {
		for _, x := range args {
			if x == stringToken(db) {
				a[fmt.Sprintf("%d/%s", db, stringLock)] = true
			}
			if x == ownerField(db) {
				a[fmt.Sprintf("%d/%s", db, hashLock)] = true
			}
		}
	}
	return a
}

// needsRestart reports a diff that FLUSHALL does not undo.
func needsRestart(diffs []string) bool {
	for _, d := range diffs {
		for _, w := range []string{"acl changed", "config changed", "replication changed", "topology", "server"} {
			if strings.Contains(d, w) {
				return true
			}
		}
	}
	return false
}
