package main

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/lockproxy/lockproxy/internal/cmdgrammar"
	"github.com/lockproxy/lockproxy/internal/valkeytest"
	"github.com/redis/go-redis/v9"
)

// The cluster world: a Valkey Cluster (three primaries, a replica each)
// with lockproxy in front, and held locks and fenced resources whose keys
// fall in several slots. Its lines are the CLUSTER subcommands and
// (a third) the other commands, on these keys; the check adds the
// cluster's topology (node set, roles, slot map) to what must not change.
var (
	clusterLocks  = []string{"a:lock", "b:lock", "c:lock"}
	clusterFenced = []string{"{o1}", "{o2}", "{o3}"}
)

func clusterToken(k string) string { return "victimtoken-" + k }

type clusterWorld struct {
	cl     *valkeytest.Cluster
	lp     *lockproxy
	nodes  map[string]*redis.Client // every node, by address
	prims  []string                 // the primaries' addresses when built
	victim *rawConn
	base   *snapshot
	ids    []string // node ids, for the lines' node-id arguments
	slots  []string // the protected keys' slots, for slot arguments
}

func newClusterWorld() (*clusterWorld, error) {
	w := &clusterWorld{}
	return w, w.start()
}

func (w *clusterWorld) start() error {
	var err error
	if w.cl, err = valkeytest.StartCluster(); err != nil {
		return err
	}
	if w.lp, err = startProxy("", w.cl.Seeds()); err != nil {
		return err
	}
	w.nodes = map[string]*redis.Client{}
	for _, n := range w.cl.Nodes {
		w.nodes[n.Addr] = redis.NewClient(&redis.Options{Addr: n.Addr, Protocol: 2, ReadTimeout: 5 * time.Second, MaxRetries: 1, PoolSize: 2})
	}
	return w.build()
}

func (w *clusterWorld) stop() {
	if w.victim != nil {
		w.victim.close()
		w.victim = nil
	}
	for _, c := range w.nodes {
		c.Close()
	}
	if w.lp != nil {
		w.lp.stop()
	}
	w.cl.Stop()
}

func (w *clusterWorld) build() error {
	if w.victim != nil {
		w.victim.close()
		w.victim = nil
	}
	prims, err := w.cl.Primaries()
	if err != nil {
		return err
	}
	w.prims = w.prims[:0]
	w.ids = w.ids[:0]
	for _, p := range prims {
		w.prims = append(w.prims, p.Addr)
		c := w.nodes[p.Addr]
		if err := c.FlushAll(ctx).Err(); err != nil {
			return fmt.Errorf("FLUSHALL %s: %v", p.Addr, err)
		}
		if err := c.FunctionFlush(ctx).Err(); err != nil {
			return fmt.Errorf("FUNCTION FLUSH %s: %v", p.Addr, err)
		}
	}
	for _, n := range w.cl.Nodes {
		id, err := valkeytest.NodeID(n)
		if err != nil {
			return err
		}
		w.ids = append(w.ids, id)
	}
	if err := waitReady(w.lp.addr); err != nil {
		return err
	}
	v, err := dialRaw(w.lp.addr)
	if err != nil {
		return err
	}
	w.victim = v
	steps := [][]string{{"EVAL", redissonWriteLock, "1", hashLock, lease, ownerField(0)}}
	for _, k := range clusterLocks {
		steps = append(steps, []string{"SET", k, clusterToken(k), "NX", "PX", lease})
	}
	for _, b := range clusterFenced {
		steps = append(steps, []string{"SET", b + ":mutex", clusterToken(b + ":mutex"), "NX", "PX", lease},
			[]string{"SET", b + ":data", "data" + b})
	}
	for _, s := range steps {
		r, err := v.do(s...)
		if err != nil || isError(r) {
			return fmt.Errorf("victim %q: %q %v", s[:2], r, err)
		}
	}
	w.slots = []string{"0", "16383"}
	for _, k := range append(append([]string{hashLock}, clusterLocks...), clusterFenced...) {
		w.slots = append(w.slots, strconv.Itoa(int(keySlot(k))))
	}
	if err := w.loadLibrary(); err != nil {
		return err
	}
	c, err := dialRaw(w.lp.addr)
	if err != nil {
		return err
	}
	r, err := c.do("DEL", clusterLocks[0])
	c.close()
	if err != nil || !isError(r) {
		return fmt.Errorf("cluster world not armed: a stranger's DEL %s answered %q %v", clusterLocks[0], r, err)
	}
	w.base, err = w.read(true)
	return err
}

func (w *clusterWorld) loadLibrary() error {
	c, err := dialRaw(w.lp.addr)
	if err != nil {
		return err
	}
	defer c.close()
	r, err := c.do("FUNCTION", "LOAD", "REPLACE", fzLibrary)
	if err != nil || isError(r) {
		return fmt.Errorf("FUNCTION LOAD of fzlib through lockproxy: %q %v", r, err)
	}
	return nil
}

// read reads every primary's watched keys (named "<port>/<key>"), each
// node's users and sensitive configuration, and the topology as each
// node sees it.
func (w *clusterWorld) read(libs bool) (*snapshot, error) {
	s := &snapshot{at: time.Now(), keys: map[string]keyState{}, global: map[string]string{}}
	for _, addr := range w.prims {
		c := w.nodes[addr]
		port, _ := strconv.Atoi(addr[strings.LastIndexByte(addr, ':')+1:])
		if err := readKeys(c, port, nil, []string{"*lockproxy*", "*:lock", "{o?}:*"}, s.keys); err != nil {
			return nil, err
		}
		g := map[string]string{}
		if err := readGlobal(c, g); err != nil {
			return nil, fmt.Errorf("%s: %v", addr, err)
		}
		for k, v := range g {
			s.global[addr+" "+k] = v
		}
		if libs {
			bad, err := unmonitoredLibraries(c)
			if err != nil {
				return nil, err
			}
			s.global[addr+" libraries without lockproxy's monitor"] = bad
		}
	}
	for addr, c := range w.nodes {
		nodes, err := c.ClusterNodes(ctx).Result()
		if err != nil {
			return nil, fmt.Errorf("CLUSTER NODES %s: %v", addr, err)
		}
		s.global[addr+" topology"] = topology(nodes)
	}
	return s, nil
}

// topology is CLUSTER NODES without what changes by itself (pings, link
// state, failure suspicions, which line is "myself"): ids, addresses,
// roles, primaries and slots.
func topology(nodes string) string {
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(nodes), "\n") {
		f := strings.Fields(l)
		if len(f) < 8 {
			continue
		}
		addr, _, _ := strings.Cut(f[1], "@")
		var roles []string
		for _, fl := range strings.Split(f[2], ",") {
			switch fl {
			case "master", "slave", "handshake", "noaddr":
				roles = append(roles, fl)
			}
		}
		lines = append(lines, strings.Join(append([]string{f[0], addr, strings.Join(roles, ","), f[3]}, f[8:]...), " "))
	}
	sort.Strings(lines)
	return strings.Join(lines, "; ")
}

func (w *clusterWorld) name() string        { return "cluster" }
func (w *clusterWorld) proxyAddr() string   { return w.lp.addr }
func (w *clusterWorld) port() int           { return w.cl.Nodes[0].Port }
func (w *clusterWorld) baseline() *snapshot { return w.base }
func (w *clusterWorld) strangerDB(*rand.Rand) int {
	return 0
}
func (w *clusterWorld) afterSend(int) {}

func (w *clusterWorld) stat(name string) (cmdStat, error) {
	var sum cmdStat
	for _, c := range w.nodes {
		s, err := readStat(c, name)
		if err != nil {
			return sum, err
		}
		sum.calls, sum.failed, sum.rejected = sum.calls+s.calls, sum.failed+s.failed, sum.rejected+s.rejected
	}
	return sum, nil
}

func (w *clusterWorld) allowed(args []string) map[string]bool {
	keys := map[string]bool{}
	for _, a := range args {
		if k, ok := strings.CutPrefix(a, "victimtoken-"); ok {
			keys[k] = true
		}
		if a == ownerField(0) {
			keys[hashLock] = true
		}
	}
	out := map[string]bool{}
	for name := range w.base.keys {
		if _, k, _ := strings.Cut(name, "/"); keys[k] {
			out[name] = true
		}
	}
	return out
}

// restore: FLUSHALL on the primaries and rebuild; or, when the topology,
// users or configuration changed or a node stopped, a new cluster.
func (w *clusterWorld) restore(restart bool) error {
	if !restart {
		if err := w.build(); err == nil {
			return nil
		}
	}
	w.stop()
	return w.start()
}

// clusterPools are the cluster world's values: its keys, tokens, node
// ids and the slots of its protected keys.
func clusterPools(base *cmdgrammar.Pools, w *clusterWorld) *cmdgrammar.Pools {
	keys := []string{hashLock, "{rw:lock}:lockproxy:owners", "lockproxy:epoch", "{p1}:plain", "{p2}:plain"}
	strs := []string{"mode", "x", "1", ownerField(0)}
	for _, k := range clusterLocks {
		keys = append(keys, k, k)
		strs = append(strs, clusterToken(k))
	}
	for _, b := range clusterFenced {
		keys = append(keys, b+":mutex", b+":data", b+":fence")
	}
	byName := map[string][]string{}
	for k, v := range base.ByName {
		byName[k] = v
	}
	for _, n := range []string{"node-id", "node", "replicaid"} {
		byName[n] = append([]string{"0123456789abcdef0123456789abcdef01234567"}, w.ids...)
	}
	for _, n := range []string{"slot", "start-slot", "end-slot"} {
		byName[n] = w.slots
	}
	byName["config-epoch"] = []string{"1", "100"}
	return &cmdgrammar.Pools{Keys: keys, Strings: strs, ByName: byName, Bare: base.Bare, Now: base.Now}
}

// keySlot is Valkey's CRC16 slot of a key (its hash tag's, if any).
func keySlot(key string) uint16 {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	var crc uint16
	for i := 0; i < len(key); i++ {
		crc ^= uint16(key[i]) << 8
		for b := 0; b < 8; b++ {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc % 16384
}

// runCluster runs the cluster world until end: CLUSTER subcommands two
// lines in three, other commands the third.
func runCluster(r *runner, base *cmdgrammar.Pools, clusterCmds, plain []*cmdgrammar.Command, end time.Time) error {
	if time.Now().After(end) {
		return nil
	}
	w, err := newClusterWorld()
	if err != nil {
		return fmt.Errorf("cluster world: %v", err)
	}
	defer func() { w.stop() }()
	or, err := newOracle(true)
	if err != nil {
		return fmt.Errorf("cluster oracle: %v", err)
	}
	defer or.close()
	// Each round: every CLUSTER subcommand twice, and as many lines of
	// other commands (each drawn at random), so these get a third.
	all := append(append([]*cmdgrammar.Command{}, clusterCmds...), clusterCmds...)
	for i := 0; i < len(clusterCmds) && len(plain) > 0; i++ {
		all = append(all, plain[0])
	}
	return each(r, all, end, func(c *cmdgrammar.Command) error {
		if c.Words[0] != "CLUSTER" {
			c = plain[r.rng.IntN(len(plain))]
		}
		// Node ids change when a line made the world start a new cluster.
		return r.line(w, clusterPools(base, w), or, c)
	})
}
