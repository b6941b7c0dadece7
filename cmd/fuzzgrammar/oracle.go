package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/lockproxy/lockproxy/internal/cmdgrammar"
	"github.com/lockproxy/lockproxy/internal/valkeytest"
	"github.com/redis/go-redis/v9"
)

// oracle is a scratch valkey-server that gets every line directly, with
// the world's keys written as plain values: whether it accepts a line is
// what Valkey understands. It is refilled after a line that it accepted
// changed it, and restarted after one that reconfigured or stopped it.
type oracle struct {
	dir     string
	srv     *valkeytest.Server
	direct  *redis.Client
	base    map[string]string
	cluster bool // cluster-enabled: one node, no slots, database 0 only
}

func newOracle(cluster bool) (*oracle, error) {
	var directives []string
	if cluster {
		directives = []string{"cluster-enabled yes", "cluster-config-file nodes.conf"}
	}
	dir, err := os.MkdirTemp("", "fuzzgrammar-oracle-")
	if err != nil {
		return nil, err
	}
	o := &oracle{dir: dir, cluster: cluster}
	if o.srv, err = valkeytest.Launch(dir, directives...); err != nil {
		return nil, err
	}
	o.dial()
	if err := o.fill(); err != nil {
		return nil, err
	}
	o.base = map[string]string{}
	return o, readGlobal(o.direct, o.base)
}

func (o *oracle) dial() {
	if o.direct != nil {
		o.direct.Close()
	}
	o.direct = redis.NewClient(&redis.Options{Addr: o.srv.Addr, Protocol: 2, ReadTimeout: 5 * time.Second, MaxRetries: 1, PoolSize: 2})
}

func (o *oracle) close() {
	o.direct.Close()
	o.srv.Stop()
	os.RemoveAll(o.dir)
}

// fill writes the world's keys directly, as plain values, in both
// databases, and in holderDB what the stranger holds there.
func (o *oracle) fill() error {
	if err := o.direct.FlushAll(ctx).Err(); err != nil {
		return err
	}
	if o.cluster {
		// A line may have given it slots or met other nodes.
		// Then it owns every slot, alone, to hold the world's keys.
		if err := o.direct.Do(ctx, "CLUSTER", "RESET", "HARD").Err(); err != nil {
			return fmt.Errorf("oracle CLUSTER RESET: %v", err)
		}
		if err := o.direct.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", "0", "16383").Err(); err != nil {
			return fmt.Errorf("oracle CLUSTER ADDSLOTSRANGE: %v", err)
		}
		for deadline := time.Now().Add(10 * time.Second); !strings.Contains(o.direct.ClusterInfo(ctx).Val(), "cluster_state:ok"); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				return fmt.Errorf("oracle: no cluster_state:ok")
			}
		}
	}
	dbs := worldDBs
	if o.cluster {
		dbs = []int{0}
	}
	for _, db := range dbs {
		cmds := [][]any{{"SELECT", db},
			{"SET", stringLock, stringToken(db), "PX", lease},
			{"HSET", hashLock, "mode", "write", ownerField(db), "1"}, {"PEXPIRE", hashLock, lease},
			{"SET", mutex, "mutextoken", "PX", lease}, {"SET", guarded, "data"}, {"SET", fence, "1"},
			{"SET", "plain:str", "s"}, {"HSET", "plain:hash", "f", "v"}, {"RPUSH", "plain:list", "a", "b"},
			{"SADD", "plain:set", "a"}, {"ZADD", "plain:zset", "1", "a"}, {"XADD", "plain:stream", "1-1", "f", "v"},
		}
		// One connection for the SELECT and what follows it.
		conn := o.direct.Conn()
		for _, c := range cmds {
			if err := conn.Do(ctx, c...).Err(); err != nil {
				conn.Close()
				return fmt.Errorf("oracle fill %v: %v", c, err)
			}
		}
		conn.Close()
	}
	if !o.cluster {
		// holderDB as a stranger sees it there: holding the world's lock
		// names (stranger), so that a line's forms are asked of Valkey in
		// the state the stranger sent them in.
		conn := o.direct.Conn()
		defer conn.Close()
		for _, c := range [][]any{{"SELECT", holderDB}, {"SET", stringLock, "strangertoken", "PX", lease},
			{"SET", mutex, "strangertoken", "PX", lease}, {"SET", guarded, "fromstranger"},
			// Back to 0: the connection returns to the client's pool.
			{"SELECT", 0}} {
			if err := conn.Do(ctx, c...).Err(); err != nil {
				return fmt.Errorf("oracle fill %v: %v", c, err)
			}
		}
	}
	return nil
}

// ask sends a line to the oracle on a fresh connection: accepted when the
// reply is no error; ok false when no reply came (it blocked, or the line
// stopped the server).
func (o *oracle) ask(args []string, timeout time.Duration) (accepted, ok bool, reply []byte) {
	return o.askIn(0, args, timeout)
}

// askIn is ask in database db.
func (o *oracle) askIn(db int, args []string, timeout time.Duration) (accepted, ok bool, reply []byte) {
	c, err := dialRaw(o.srv.Addr)
	if err != nil {
		return false, false, nil
	}
	defer c.close()
	if db != 0 {
		if r, err := c.do("SELECT", strconv.Itoa(db)); err != nil || isError(r) {
			return false, false, nil
		}
	}
	c.timeout = timeout
	r, err := c.do(args...)
	if err != nil {
		return false, false, nil
	}
	return !isError(r), true, r
}

// after puts the oracle back as it was once a line ran.
func (o *oracle) after(c *cmdgrammar.Command, accepted, ok bool) error {
	restart := !ok || o.direct.Ping(ctx).Err() != nil
	if !restart && accepted && c.Reconfigures() {
		_ = o.direct.Do(ctx, "CLIENT", "UNPAUSE").Err()
		now := map[string]string{}
		if err := readGlobal(o.direct, now); err != nil {
			restart = true
		}
		for k, v := range o.base {
			if now[k] != v {
				restart = true
			}
		}
	}
	if restart {
		if err := o.srv.Relaunch(); err != nil {
			return err
		}
		o.dial()
		return o.fill()
	}
	if accepted && (c.Writes() || c.Reconfigures()) {
		return o.fill()
	}
	return nil
}

// dumps are serialized values made on the oracle, for the lines'
// serialized-value arguments: a library without lockproxy's monitor
// (FUNCTION RESTORE) and a string (RESTORE).
func (o *oracle) dumps() ([]string, error) {
	if err := o.direct.FunctionLoad(ctx, evilLibrary).Err(); err != nil {
		return nil, err
	}
	lib, err := o.direct.FunctionDump(ctx).Result()
	if err != nil {
		return nil, err
	}
	if err := o.direct.FunctionFlush(ctx).Err(); err != nil {
		return nil, err
	}
	str, err := o.direct.Dump(ctx, "plain:str").Result()
	if err != nil {
		return nil, err
	}
	return []string{lib, str}, nil
}

// evilLibrary is a library a stranger would load: its function deletes
// the key it is given. Loaded through lockproxy it must carry the monitor.
const evilLibrary = "#!lua name=fzevil\nredis.register_function('evil', function(keys, args) return redis.call('DEL', keys[1]) end)"
