package lockproxy_test

import (
	"bytes"
	"fmt"
	"math/rand"
	"strings"
	"sync"
	"testing"

	"github.com/lockproxy/lockproxy/internal/valkeytest"
	"github.com/lockproxy/lockproxy/proxy"
	"github.com/lockproxy/lockproxy/resp"
)

// TestDifferential sends the same command sequences to one Valkey directly
// and to an identical one through lockproxy, from many concurrent clients,
// pipelined, in RESP2 and RESP3, and compares every reply byte for byte.
//
// It runs once per client engine: event loops, and a goroutine per client
// (what TLS clients and clients on dedicated connections get).
func TestDifferential(t *testing.T) {
	eachEngine(t, differential)
}

func differential(t *testing.T, o proxy.Options) {
	direct := valkeytest.Start(t)
	o.Upstream.PoolSize = 2
	e := newEnv(t, o)
	const clients = 16
	var wg sync.WaitGroup
	errs := make(chan string, clients)
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			cmds := sequence(rand.New(rand.NewSource(int64(c))), fmt.Sprintf("c%d:", c), c%2 == 1)
			want := replay(t, direct.Addr, cmds)
			got := replay(t, e.addr, cmds)
			if len(got) != len(want) {
				errs <- fmt.Sprintf("client %d: %d replies through the proxy, %d direct", c, len(got), len(want))
				return
			}
			for i := range want {
				if cmds[i].skipCompare {
					continue
				}
				if !bytes.Equal(got[i], want[i]) {
					errs <- fmt.Sprintf("client %d command %d %q:\n proxy:  %.200q\n direct: %.200q", c, i, cmds[i].args, got[i], want[i])
					return
				}
			}
		}(c)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

type diffCmd struct {
	args        []string
	skipCompare bool // the reply differs by nature (HELLO names the connection id)
}

// sequence is one client's commands: strings, hashes, lists, sets, sorted
// sets, scripts returning nested tables, nils, errors, binary and large
// values, in an order fixed by the seed.
func sequence(rng *rand.Rand, p string, resp3 bool) []diffCmd {
	var out []diffCmd
	add := func(args ...string) { out = append(out, diffCmd{args: args}) }
	if resp3 {
		out = append(out, diffCmd{args: []string{"HELLO", "3"}, skipCompare: true})
	}
	bin := string([]byte{0, 1, 2, '\r', '\n', 255, '$', '*'})
	big := strings.Repeat("x", 1<<20)
	for i := 0; i < 300; i++ {
		k := fmt.Sprintf("%sk%d", p, rng.Intn(8))
		switch rng.Intn(22) {
		case 0:
			add("SET", k, fmt.Sprint(rng.Int()))
		case 1:
			add("GET", k)
		case 2:
			add("INCR", k)
		case 3:
			add("HSET", k+"h", "f"+fmt.Sprint(rng.Intn(4)), bin)
		case 4:
			add("HGETALL", k+"h")
		case 5:
			add("LPUSH", k+"l", bin, "b")
		case 6:
			add("LRANGE", k+"l", "0", "-1")
		case 7:
			add("SADD", k+"s", "a", "b", fmt.Sprint(rng.Intn(9)))
		case 8:
			// SMEMBERS's order depends on each server's hash seed (Redis 7.0
			// keeps small sets in a hash table): compare sorted.
			add("SORT", k+"s", "ALPHA")
			add("SISMEMBER", k+"s", "a")
		case 9:
			add("ZADD", k+"z", fmt.Sprint(rng.Float64()), "m"+fmt.Sprint(rng.Intn(5)))
		case 10:
			add("ZRANGE", k+"z", "0", "-1", "WITHSCORES")
		case 11:
			add("ZSCORE", k+"z", "m1")
		case 12:
			add("EVAL", "return {1, {2, {3, 'x'}}, 'y', KEYS[1]}", "1", k)
		case 13:
			add("EVAL", "return redis.call('GET', KEYS[1])", "1", k+"missing")
		case 14:
			add("EVAL", "return redis.error_reply('MYERR scripted failure')", "0")
		case 15:
			add("GET", k+"h") // WRONGTYPE after HSET, or nil
		case 16:
			add("NOSUCHCOMMAND", k)
		case 17:
			add("SET", k+"bin", bin)
			add("GET", k+"bin")
		case 18:
			if rng.Intn(10) == 0 {
				add("SET", k+"big", big)
				add("STRLEN", k+"big")
				add("GET", k+"big")
			}
		case 19:
			add("MGET", k, k+"missing", k+"bin")
		case 20:
			add("EXISTS", k, k+"h", k+"missing")
		case 21:
			add("HINCRBYFLOAT", k+"h", "fl", "1.5")
		}
	}
	add("DEL", p+"k0", p+"k1h", p+"k2l")
	return out
}

// replay sends cmds on one connection in pipelined chunks of random size and
// returns every reply's bytes.
func replay(t *testing.T, addr string, cmds []diffCmd) [][]byte {
	r := dialRaw(t, addr)
	var out [][]byte
	for i := 0; i < len(cmds); {
		n := 1 + i%17
		if i+n > len(cmds) {
			n = len(cmds) - i
		}
		var buf []byte
		for _, c := range cmds[i : i+n] {
			buf = resp.AppendCommandStrings(buf, c.args...)
		}
		r.send(string(buf))
		for j := 0; j < n; j++ {
			out = append(out, []byte(r.read()))
		}
		i += n
	}
	return out
}
