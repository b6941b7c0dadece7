package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/lockproxy/lockproxy/config"
	"github.com/lockproxy/lockproxy/internal/valkeytest"
	"github.com/lockproxy/lockproxy/proxy"
	"github.com/redis/go-redis/v9"
)

// ruleExtra is added to the rule: -durability and -max-lease (one
// in-process proxy only).
var ruleExtra string

// rulesYAML is the proxy's one rule; session is "" (the default,
// connection) or the owner scope of the several-instance run.
func rulesYAML(session string) string {
	y := "locks:\n  - pattern: \"{*}:lock\"\n    release: rewrite\n" + ruleExtra
	if session != "" {
		y += "    session: " + session + "\n"
	}
	return y + `    fence:
      counter: "{base}:fence"
      guards: ["{base}:items"]
      check: highest
      unfenced_writes: reject
`
}

// proxyOptions are the options of every proxy a run starts: short reply
// timeout and backoffs, so that restarts are felt and recovered from fast.
// With sentinels, it follows the primary Sentinel names (upstream is the
// first one).
func proxyOptions(upstream string, seeds, sentinels []string, session string) (proxy.Options, error) {
	cfg, err := config.Parse("chaos.yaml", []byte(rulesYAML(session)))
	if err != nil {
		return proxy.Options{}, err
	}
	u := &cfg.Upstream
	u.Addr = upstream
	if len(seeds) > 0 {
		u.Addr, u.Cluster.Seeds = "", seeds
	}
	if len(sentinels) > 0 {
		u.Sentinel = config.SentinelConfig{Master: sentinelMaster, Addrs: sentinels}
	}
	u.ReplyTimeout, u.DialTimeout = config.Duration(time.Second), config.Duration(time.Second)
	u.ReconnectBackoff, u.MaxBackoff = config.Duration(20*time.Millisecond), config.Duration(200*time.Millisecond)
	return proxy.Options{Config: *cfg, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, nil
}

type options struct {
	duration     time.Duration
	workers      int
	locks        int
	lease        time.Duration
	stallP       float64
	stopEvery    time.Duration
	restartEvery time.Duration
	maxGrants    int
	instances    int
	mode         string
	valkey       string
	seed         uint64
	json         bool
	keep         bool
	cluster      bool
	sentinel     bool
	scripts      bool
	loseWrites   bool
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("chaos", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.DurationVar(&o.duration, "duration", 60*time.Second, "length of each run (one with lockproxy, one without)")
	fs.IntVar(&o.workers, "workers", 6, "worker processes")
	fs.IntVar(&o.locks, "locks", 2, "locks they contend for")
	fs.DurationVar(&o.lease, "lease", 250*time.Millisecond, "lock lease (PX)")
	fs.Float64Var(&o.stallP, "stall", 0.3, "probability that a critical section sleeps past its lease")
	fs.DurationVar(&o.stopEvery, "stop-every", 300*time.Millisecond, "mean interval between SIGSTOPs of a worker")
	fs.DurationVar(&o.restartEvery, "restart-every", 2500*time.Millisecond, "mean interval between restarts (proxy and Valkey alternately)")
	fs.IntVar(&o.maxGrants, "max-grants", 100000, "most critical sections per worker")
	fs.IntVar(&o.instances, "instances", 1, "lockproxy instances in front of the one Valkey; with 2 or more, each is a process of its own, "+
		"workers send each command to the next instance in turn (session: client_name), and a random one is killed with SIGKILL and started again")
	fs.StringVar(&o.mode, "mode", "both", "both | proxy | plain")
	fs.StringVar(&o.valkey, "valkey", "valkey-server", "valkey-server binary")
	fs.Uint64Var(&o.seed, "seed", 0, "random seed (0: from the clock)")
	fs.BoolVar(&o.json, "json", false, "also print the totals as JSON lines")
	fs.BoolVar(&o.keep, "keep", false, "keep the run directory (histories, Valkey files)")
	fs.BoolVar(&o.cluster, "cluster", false, "a local Valkey Cluster (3 primaries, 3 replicas) instead of one Valkey: "+
		"the Valkey restarts become CLUSTER FAILOVERs and brief SIGSTOPs of a primary; the plain run uses a cluster-aware client")
	fs.BoolVar(&o.sentinel, "sentinel", false, "a primary, its replica and 3 Sentinels instead of one Valkey, lockproxy following Sentinel: "+
		"the Valkey fault is a primary killed (SIGKILL) while its replica is cut off, Sentinel promoting the replica, the old primary "+
		"restarted as its replica; the plain run uses a Sentinel-aware client")
	fs.BoolVar(&o.scripts, "scripts", false, "workers take, write and release with a lock library's own scripts (bsm/redislock's obtain and release, "+
		"a scripted RPUSH) instead of SET NX, RPUSH and a blind DEL: through the proxy each runs in its wrapper")
	fs.BoolVar(&o.loseWrites, "lose-writes", false, "run Valkey without persistence: each Valkey restart of the schedule (SIGKILL) loses "+
		"every lock, counter, record and resource entry, as a primary restarted without persistence does (issue 29); with -cluster, "+
		"the Valkey fault is a primary killed (SIGKILL) while its replica is cut off, and the replica promoted")
	var durable int
	var maxLease time.Duration
	fs.IntVar(&durable, "durability", 0, "the rule's durability: {replicas: N, timeout: 200ms} (0: off; one instance; a replica to acknowledge exists with -sentinel and -cluster)")
	fs.DurationVar(&maxLease, "max-lease", 0, "the rule's max_lease (0: none; one instance); workers ask for -lease")
	// Worker mode (the driver re-executes this binary).
	var wc workerConfig
	var worker bool
	var untilNS int64
	var addrs string
	fs.BoolVar(&worker, "worker", false, "internal: run as a worker")
	fs.IntVar(&wc.id, "id", 0, "internal")
	fs.StringVar(&addrs, "addr", "", "internal: comma-separated")
	fs.StringVar(&wc.name, "name", "", "internal")
	fs.BoolVar(&wc.proxied, "proxied", false, "internal")
	fs.BoolVar(&wc.cluster, "cluster-client", false, "internal")
	fs.BoolVar(&wc.sentinel, "sentinel-client", false, "internal")
	fs.BoolVar(&wc.scripts, "worker-scripts", false, "internal")
	fs.Int64Var(&untilNS, "until", 0, "internal")
	fs.StringVar(&wc.out, "out", "", "internal")
	// Proxy mode: one lockproxy instance of a several-instance run.
	var serve, upstream, session string
	fs.StringVar(&serve, "serve-proxy", "", "internal: run a lockproxy instance on this address")
	fs.StringVar(&upstream, "upstream", "", "internal")
	fs.StringVar(&session, "session", "", "internal")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if worker {
		wc.locks, wc.lease, wc.stallP, wc.maxGrant, wc.seed = o.locks, o.lease, o.stallP, o.maxGrants, o.seed
		wc.addrs = strings.Split(addrs, ",")
		wc.until = time.Unix(0, untilNS)
		if err := runWorker(wc); err != nil {
			fmt.Fprintln(stderr, "worker:", err)
			return 1
		}
		return 0
	}
	if serve != "" {
		if err := serveProxy(serve, upstream, session); err != nil {
			fmt.Fprintln(stderr, "chaos proxy:", err)
			return 1
		}
		return 0
	}
	if o.seed == 0 {
		o.seed = uint64(time.Now().UnixNano())
	}
	if durable > 0 {
		ruleExtra += fmt.Sprintf("    durability: {replicas: %d, timeout: 200ms}\n", durable)
	}
	if maxLease > 0 {
		ruleExtra += fmt.Sprintf("    max_lease: %s\n", maxLease)
	}
	if ruleExtra != "" && o.instances > 1 {
		fmt.Fprintln(stderr, "chaos: -durability and -max-lease run one lockproxy instance; leave -instances at 1")
		return 2
	}
	if o.workers < 1 || o.locks < 1 || o.lease <= 0 || o.duration <= 0 || o.instances < 1 {
		fmt.Fprintln(stderr, "chaos: -workers, -locks, -lease, -duration and -instances must be positive")
		return 2
	}
	if (o.cluster || o.sentinel) && o.instances > 1 {
		fmt.Fprintln(stderr, "chaos: -cluster and -sentinel run one lockproxy instance; leave -instances at 1")
		return 2
	}
	if o.cluster && o.sentinel {
		fmt.Fprintln(stderr, "chaos: -cluster or -sentinel, not both")
		return 2
	}
	var modes []string
	switch o.mode {
	case "both":
		modes = []string{"proxy", "plain"}
	case "proxy", "plain":
		modes = []string{o.mode}
	default:
		fmt.Fprintln(stderr, "chaos: -mode is both, proxy or plain")
		return 2
	}
	where := "one Valkey"
	if o.cluster {
		where = "a Valkey Cluster"
	} else if o.sentinel {
		where = "a primary and a replica under 3 Sentinels"
	}
	fmt.Fprintf(stderr, "chaos: %d workers, %d locks, lease %v, stall probability %.2f, %d proxy instance(s) in front of %s, %v per run, seed %d\n",
		o.workers, o.locks, o.lease, o.stallP, o.instances, where, o.duration, o.seed)
	var all []Totals
	for _, m := range modes {
		t, err := runMode(o, m, stderr)
		if err != nil {
			fmt.Fprintf(stderr, "chaos: %s run: %v\n", m, err)
			return 1
		}
		all = append(all, t)
	}
	printTable(stdout, all)
	if o.json {
		for _, t := range all {
			b, _ := json.Marshal(t)
			fmt.Fprintf(stdout, "TOTALS %s\n", b)
		}
	}
	status := 0
	for _, t := range all {
		if t.Mode == "proxy" && t.Violations() != 0 {
			fmt.Fprintln(stdout, "FAIL: violations through lockproxy")
			status = 1
		}
		if t.Mode == "plain" && t.Violations() == 0 {
			fmt.Fprintln(stdout, "FAIL: no violation against plain Valkey: the checker could not tell the difference")
			status = 1
		}
	}
	if status == 0 {
		fmt.Fprintln(stdout, "PASS")
	}
	return status
}

// valkey is the valkey-server process of a run.
type valkey struct {
	bin, conf, addr, dir string
	cmd                  *exec.Cmd
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// startValkey starts valkey-server in dir (its configuration file, log
// and data there) with the extra directives.
func startValkey(bin, dir string, loseWrites bool, extra ...string) (*valkey, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	v := &valkey{bin: bin, dir: dir, addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), conf: filepath.Join(dir, "valkey.conf")}
	conf := strings.Join([]string{
		"port " + strconv.Itoa(port), "bind 127.0.0.1", "dir " + dir,
		"logfile " + filepath.Join(dir, "valkey.log"),
		"save \"\"", "appendonly yes", "appendfsync always",
	}, "\n") + "\n"
	for _, d := range extra {
		conf += d + "\n"
	}
	if loseWrites {
		conf = strings.Replace(conf, "appendonly yes", "appendonly no", 1)
	}
	if err := os.WriteFile(v.conf, []byte(conf), 0o600); err != nil {
		return nil, err
	}
	return v, v.start()
}

func (v *valkey) start() error {
	v.cmd = exec.Command(v.bin, v.conf)
	if err := v.cmd.Start(); err != nil {
		return err
	}
	c := redis.NewClient(&redis.Options{Addr: v.addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	defer c.Close()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if c.Ping(context.Background()).Err() == nil {
			return nil
		}
	}
	return fmt.Errorf("valkey-server did not answer on %s (see %s)", v.addr, filepath.Join(v.dir, "valkey.log"))
}

func (v *valkey) kill() {
	if v.cmd != nil && v.cmd.Process != nil {
		_ = v.cmd.Process.Kill()
		_ = v.cmd.Wait()
		v.cmd = nil
	}
}

// proxyRunner runs lockproxy in-process on a fixed address across restarts.
type proxyRunner struct {
	addr, upstream string
	seeds          []string // in front of a cluster
	sentinels      []string // following Sentinel
	p              *proxy.Proxy
	done           chan error
}

func (pr *proxyRunner) start() error {
	opts, err := proxyOptions(pr.upstream, pr.seeds, pr.sentinels, "")
	if err != nil {
		return err
	}
	p, err := proxy.New(opts)
	if err != nil {
		return err
	}
	l, err := listenRetry(pr.addr)
	if err != nil {
		p.Close()
		return err
	}
	pr.p, pr.done = p, make(chan error, 1)
	go func() { pr.done <- p.Serve(l) }()
	return nil
}

// listenRetry listens on addr, retrying for 2 s while the previous
// proxy's socket is still being closed.
func listenRetry(addr string) (net.Listener, error) {
	for i := 0; ; i++ {
		l, err := net.Listen("tcp", addr)
		if err == nil || i == 100 {
			return l, err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (pr *proxyRunner) stop() {
	if pr.p == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = pr.p.Shutdown(ctx)
	<-pr.done
	pr.p = nil
}

type workerProc struct {
	cmd     *exec.Cmd
	mu      sync.Mutex
	stopped bool
	exited  chan struct{}
}

func runMode(o options, mode string, logw io.Writer) (Totals, error) {
	dir, err := os.MkdirTemp("", "lockproxy-chaos-"+mode+"-")
	if err != nil {
		return Totals{}, err
	}
	if o.keep {
		fmt.Fprintf(logw, "chaos: %s run in %s\n", mode, dir)
	} else {
		defer os.RemoveAll(dir)
	}
	// One Valkey, or a cluster (vk nil): its seeds are where the plain
	// run's cluster client starts and what the proxy is given; or a
	// primary and replica under Sentinels (vk nil), whose addresses the
	// plain run's Sentinel client and the proxy are given.
	var vk *valkey
	var cl *valkeytest.Cluster
	var ss *sentinelSet
	var upstream string
	var seeds, sentinels []string
	if o.sentinel {
		if ss, err = startSentinelSet(o.valkey, dir, o.loseWrites); err != nil {
			return Totals{}, err
		}
		defer ss.stop()
		sentinels = ss.addrs
		upstream = ss.nodes[0].addr
	} else if o.cluster {
		if cl, err = valkeytest.StartCluster(); err != nil {
			return Totals{}, err
		}
		defer cl.Stop()
		seeds = cl.Seeds()
		upstream = seeds[0]
		if o.loseWrites {
			if err := replicasAsRepl(cl); err != nil {
				return Totals{}, err
			}
		}
	} else {
		if vk, err = startValkey(o.valkey, dir, o.loseWrites); err != nil {
			return Totals{}, err
		}
		defer vk.kill()
		upstream = vk.addr
	}

	self, err := os.Executable()
	if err != nil {
		return Totals{}, err
	}
	// Where the workers send their commands: Valkey itself in plain mode
	// (once per instance, so that both modes make the same connections),
	// else the proxy, or each of the proxy instances in turn.
	targets := make([]string, o.instances)
	for i := range targets {
		targets[i] = upstream
	}
	var pr *proxyRunner
	var instances []*proxyProc
	if mode == "proxy" {
		for i := range targets {
			port, err := freePort()
			if err != nil {
				return Totals{}, err
			}
			targets[i] = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		}
		if o.instances == 1 {
			pr = &proxyRunner{addr: targets[0], upstream: upstream, seeds: seeds, sentinels: sentinels}
			if err := pr.start(); err != nil {
				return Totals{}, err
			}
			defer func() { pr.stop() }()
		} else {
			for _, addr := range targets {
				pp := &proxyProc{self: self, addr: addr, upstream: upstream, logw: logw}
				instances = append(instances, pp)
				defer pp.stop()
				if err := pp.start(); err != nil {
					return Totals{}, err
				}
			}
		}
	}
	until := time.Now().Add(o.duration)
	var ws []*workerProc
	for i := 0; i < o.workers; i++ {
		addrs := targets
		if mode == "plain" && o.sentinel {
			addrs = sentinels
		}
		args := []string{"-worker", "-id", strconv.Itoa(i), "-addr", strings.Join(addrs, ","),
			"-until", strconv.FormatInt(until.UnixNano(), 10), "-out", filepath.Join(dir, fmt.Sprintf("worker%d.jsonl", i)),
			"-locks", strconv.Itoa(o.locks), "-lease", o.lease.String(), "-stall", fmt.Sprint(o.stallP),
			"-max-grants", strconv.Itoa(o.maxGrants), "-seed", strconv.FormatUint(o.seed, 10)}
		if mode == "proxy" {
			args = append(args, "-proxied")
		} else if o.cluster {
			args = append(args, "-cluster-client")
		} else if o.sentinel {
			args = append(args, "-sentinel-client")
		}
		if o.instances > 1 {
			args = append(args, "-name", "chaos-w"+strconv.Itoa(i))
		}
		if o.scripts {
			args = append(args, "-worker-scripts")
		}
		cmd := exec.Command(self, args...)
		cmd.Stderr = logw
		if err := cmd.Start(); err != nil {
			return Totals{}, err
		}
		wp := &workerProc{cmd: cmd, exited: make(chan struct{})}
		go func() { _ = cmd.Wait(); close(wp.exited) }()
		ws = append(ws, wp)
	}
	// Whatever happens, no worker stays stopped or running.
	defer func() {
		for _, wp := range ws {
			_ = wp.cmd.Process.Signal(syscall.SIGCONT)
			select {
			case <-wp.exited:
			case <-time.After(replyWait + 5*time.Second):
				_ = wp.cmd.Process.Kill()
				<-wp.exited
			}
		}
	}()

	// The faults, on the same schedule in both modes (same seed).
	rng := rand.New(rand.NewPCG(o.seed, 7))
	var t Totals
	var conts sync.WaitGroup
	nextStop := time.Now().Add(expDur(rng, o.stopEvery))
	// Restarts alternate, proxy first (a no-op without one); the first
	// comes a quarter into the run and none is more than 30% of the run
	// after the last, so even a short run restarts each at least once.
	restartCap := o.duration * 3 / 10
	nextRestart := time.Now().Add(o.duration / 4)
	restartProxy := true
	for time.Now().Before(until) {
		now := time.Now()
		switch {
		case !now.Before(nextStop):
			wp := ws[rng.IntN(len(ws))]
			pause := o.lease*6/5 + time.Duration(rng.Int64N(int64(o.lease*9/5)))
			wp.mu.Lock()
			if !wp.stopped && wp.cmd.Process.Signal(syscall.SIGSTOP) == nil {
				wp.stopped = true
				t.Stops++
				conts.Add(1)
				go func() {
					defer conts.Done()
					time.Sleep(pause)
					wp.mu.Lock()
					_ = wp.cmd.Process.Signal(syscall.SIGCONT)
					wp.stopped = false
					wp.mu.Unlock()
				}()
			}
			wp.mu.Unlock()
			nextStop = now.Add(expDur(rng, o.stopEvery))
		case !now.Before(nextRestart):
			if restartProxy && o.instances > 1 {
				// kill -9 one instance; it is down for up to a lease,
				// then starts again on its address.
				pp := rng.IntN(o.instances)
				down := time.Duration(rng.Int64N(int64(o.lease) + 1))
				if instances != nil {
					instances[pp].kill()
					time.Sleep(down)
					if err := instances[pp].start(); err != nil {
						return t, fmt.Errorf("restarting lockproxy instance %d: %w", pp, err)
					}
					t.ProxyKills++
				}
			} else if restartProxy {
				if pr != nil {
					pr.stop()
					if err := pr.start(); err != nil {
						return t, fmt.Errorf("restarting the proxy: %w", err)
					}
					t.ProxyRestarts++
				}
			} else if ss != nil {
				if err := sentinelLossyFailover(ss, rng, o.lease, &t); err != nil {
					return t, err
				}
			} else if cl != nil && o.loseWrites {
				if err := clusterLossyFailover(cl, rng, o.lease, &t); err != nil {
					return t, err
				}
			} else if cl != nil {
				if err := clusterFault(cl, rng, o.lease, &t); err != nil {
					return t, err
				}
			} else {
				vk.kill()
				err := vk.start()
				if err != nil {
					return t, fmt.Errorf("restarting Valkey: %w", err)
				}
				t.ValkeyRestarts++
			}
			restartProxy = !restartProxy
			nextRestart = now.Add(min(expDur(rng, o.restartEvery), restartCap))
		default:
			time.Sleep(min(time.Until(nextStop), time.Until(nextRestart), 20*time.Millisecond))
		}
	}
	conts.Wait()
	for _, wp := range ws {
		select {
		case <-wp.exited:
		case <-time.After(replyWait + 5*time.Second):
			return t, fmt.Errorf("worker did not finish")
		}
		if wp.cmd.ProcessState != nil && !wp.cmd.ProcessState.Success() {
			return t, fmt.Errorf("worker: %v", wp.cmd.ProcessState)
		}
	}

	// The history and the resource.
	var ops []Op
	for i := range ws {
		o, err := readOps(filepath.Join(dir, fmt.Sprintf("worker%d.jsonl", i)))
		if err != nil {
			return t, err
		}
		ops = append(ops, o...)
	}
	resource := map[string][]string{}
	var rc redis.Cmdable
	if cl != nil {
		c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: seeds})
		defer c.Close()
		rc = c
	} else {
		addr := ""
		if ss != nil {
			if addr, err = ss.master(); err != nil {
				return t, err
			}
		} else {
			addr = vk.addr
		}
		c := redis.NewClient(&redis.Options{Addr: addr})
		defer c.Close()
		rc = c
	}
	for i := 0; i < o.locks; i++ {
		l := "c" + strconv.Itoa(i)
		items, err := rc.LRange(context.Background(), "{"+l+"}:items", 0, -1).Result()
		if err != nil {
			return t, err
		}
		resource[l] = items
	}
	ct := Check(mode, ops, resource)
	ct.Stops, ct.ProxyRestarts, ct.ProxyKills, ct.ValkeyRestarts = t.Stops, t.ProxyRestarts, t.ProxyKills, t.ValkeyRestarts
	ct.Cluster, ct.Failovers, ct.PrimaryStops = o.cluster, t.Failovers, t.PrimaryStops
	ct.LossyFailovers, ct.Sentinel = t.LossyFailovers, o.sentinel
	ct.Scripts = o.scripts
	ct.Instances = o.instances
	ct.setPortable(o.instances > 1)
	return ct, nil
}

func expDur(rng *rand.Rand, mean time.Duration) time.Duration {
	return time.Duration(rng.ExpFloat64() * float64(mean))
}

func readOps(path string) ([]Op, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var ops []Op
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var op Op
		if err := json.Unmarshal(sc.Bytes(), &op); err != nil {
			// A worker killed mid-line leaves a torn last line only.
			if errors.Is(err, io.ErrUnexpectedEOF) {
				break
			}
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		ops = append(ops, op)
	}
	return ops, sc.Err()
}

func printTable(w io.Writer, all []Totals) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := "\t"
	for _, t := range all {
		name := "lockproxy"
		if t.Mode == "plain" {
			name = "plain Valkey"
		}
		head += name + "\t"
	}
	fmt.Fprintln(tw, head)
	row := func(label string, f func(Totals) int) {
		line := label + "\t"
		for _, t := range all {
			line += strconv.Itoa(f(t)) + "\t"
		}
		fmt.Fprintln(tw, line)
	}
	fmt.Fprintln(tw, "violations\t")
	row("successor locks deleted", func(t Totals) int { return t.SuccessorDeleted })
	row("stale writes accepted", func(t Totals) int { return t.StaleAccepted })
	row("overlapping critical sections at the resource", func(t Totals) int { return t.Overlaps })
	row("replies lost", func(t Totals) int { return t.Lost })
	row("replies misrouted", func(t Totals) int { return t.Misrouted })
	row("fencing tokens handed out twice", func(t Totals) int { return t.ReusedTokens })
	if len(all) > 0 && all[0].PortableOwners {
		row("holders refused while their lease certainly ran", func(t Totals) int { return t.HolderRefused })
	}
	fmt.Fprintln(tw, "the run\t")
	row("grants", func(t Totals) int { return t.Grants })
	row("acquire attempts that found the lock taken", func(t Totals) int { return t.Contended })
	row("writes accepted by the resource", func(t Totals) int { return t.Writes })
	row("writes refused (STALE, UNFENCED)", func(t Totals) int { return t.WritesRefused })
	release := "blind DELs"
	if len(all) > 0 && all[0].Scripts {
		release = "release scripts"
	}
	row(release+" that deleted a lock", func(t Totals) int { return t.Releases })
	row(release+" that deleted nothing", func(t Totals) int { return t.ReleasesNoop })
	row(release+" refused (NOTOWNER)", func(t Totals) int { return t.ReleasesRefused })
	row("holders overlapping in wall time", func(t Totals) int { return t.WallOverlaps })
	row("stalls past the lease (sleep)", func(t Totals) int { return t.Stalls })
	row("workers stopped (SIGSTOP)", func(t Totals) int { return t.Stops })
	row("proxy restarts", func(t Totals) int { return t.ProxyRestarts })
	row("proxy instances killed (SIGKILL) and restarted", func(t Totals) int { return t.ProxyKills })
	if len(all) > 0 && all[0].Sentinel {
		row("primaries killed (SIGKILL) with their replica cut off, replica promoted by Sentinel", func(t Totals) int { return t.LossyFailovers })
	} else if len(all) > 0 && all[0].Cluster && all[0].LossyFailovers+all[len(all)-1].LossyFailovers > 0 {
		row("primaries killed (SIGKILL) with their replica cut off, replica promoted", func(t Totals) int { return t.LossyFailovers })
	} else if len(all) > 0 && all[0].Cluster {
		row("CLUSTER FAILOVERs (on a replica)", func(t Totals) int { return t.Failovers })
		row("primaries stopped (SIGSTOP)", func(t Totals) int { return t.PrimaryStops })
	} else {
		row("Valkey restarts (SIGKILL)", func(t Totals) int { return t.ValkeyRestarts })
	}
	row("commands", func(t Totals) int { return t.Commands })
	row("-UPSTREAM/-SHUTDOWN/-CLUSTERDOWN/-TRYAGAIN errors", func(t Totals) int { return t.UpstreamErrors })
	row("commands cut by a closed connection", func(t Totals) int { return t.Cut })
	tw.Flush()
	for _, t := range all {
		for _, ex := range t.Examples {
			fmt.Fprintf(w, "  %s: %s\n", t.Mode, ex)
		}
	}
}

// clusterFault is the cluster run's Valkey fault, in turn: a coordinated
// CLUSTER FAILOVER on a random primary's replica (the replica catches up
// first: nothing acknowledged is lost), or a random primary stopped with
// SIGSTOP for 1.2 to 4 leases, well under the cluster's node timeout, so
// the cluster waits for it rather than failing it over.
func clusterFault(cl *valkeytest.Cluster, rng *rand.Rand, lease time.Duration, t *Totals) error {
	prims, err := cl.Primaries()
	if err != nil || len(prims) == 0 {
		return fmt.Errorf("the cluster's primaries: %v", err)
	}
	p := prims[rng.IntN(len(prims))]
	if t.Failovers <= t.PrimaryStops {
		r, err := cl.ReplicaOf(p)
		if err != nil {
			return err
		}
		if err := cl.Failover(r); err != nil {
			return err
		}
		t.Failovers++
		return nil
	}
	pause := min(lease*6/5+time.Duration(rng.Int64N(int64(lease*14/5))), valkeytest.ClusterNodeTimeout/2)
	if err := p.Process().Signal(syscall.SIGSTOP); err != nil {
		return err
	}
	time.Sleep(pause)
	if err := p.Process().Signal(syscall.SIGCONT); err != nil {
		return err
	}
	t.PrimaryStops++
	return nil
}

// replicasAsRepl makes every replica of the cluster log in to its primary
// as the user "repl" (so that clusterLossyFailover can cut one off by
// switching that user off): the user on every node, masteruser and
// masterauth on every node, then every replica's link killed so that it
// logs in again, and waits until every link is up.
func replicasAsRepl(cl *valkeytest.Cluster) error {
	for _, n := range cl.Nodes {
		if err := armRepl(n); err != nil {
			return err
		}
	}
	for _, n := range cl.Nodes {
		if _, err := valkeytest.Do(n.Addr, "CLIENT", "KILL", "TYPE", "replica"); err != nil {
			return err
		}
	}
	return waitLinks(cl)
}

func armRepl(n *valkeytest.Server) error {
	for _, c := range [][]string{
		{"ACL", "SETUSER", "repl", "on", ">replpw", "~*", "&*", "+@all"},
		{"CONFIG", "SET", "masteruser", "repl"},
		{"CONFIG", "SET", "masterauth", "replpw"},
	} {
		if out, err := valkeytest.Do(n.Addr, c...); err != nil || !strings.HasPrefix(out, "OK") {
			return fmt.Errorf("%s %v: %q %v", n.Addr, c, out, err)
		}
	}
	return nil
}

// waitLinks waits until every replica's link to its primary is up.
func waitLinks(cl *valkeytest.Cluster) error {
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		up := true
		for _, n := range cl.Nodes {
			info, err := valkeytest.Do(n.Addr, "INFO", "replication")
			if err != nil || strings.Contains(info, "role:slave") && !strings.Contains(info, "master_link_status:up") {
				up = false
			}
		}
		if up {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("the cluster's replicas did not all link up")
}

// clusterLossyFailover is the -cluster -lose-writes run's Valkey fault: a
// random primary's replica is cut off (its user "repl" switched off on the
// primary, its link killed), the workers go on for two leases against the
// primary alone, the primary is killed with SIGKILL and the cluster
// promotes the replica, which never got those writes. The old primary is
// started again (it rejoins as the new one's replica, empty) and its link
// armed as the others.
func clusterLossyFailover(cl *valkeytest.Cluster, rng *rand.Rand, lease time.Duration, t *Totals) error {
	prims, err := cl.Primaries()
	if err != nil || len(prims) == 0 {
		return fmt.Errorf("the cluster's primaries: %v", err)
	}
	p := prims[rng.IntN(len(prims))]
	r, err := cl.ReplicaOf(p)
	if err != nil {
		return err
	}
	for _, c := range [][]string{{"ACL", "SETUSER", "repl", "off"}, {"CLIENT", "KILL", "USER", "repl"}} {
		if _, err := valkeytest.Do(p.Addr, c...); err != nil {
			return err
		}
	}
	time.Sleep(2 * lease)
	p.Stop()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if role, _ := valkeytest.Do(r.Addr, "ROLE"); strings.HasPrefix(role, "master") {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the replica %s was not promoted", r.Addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := p.Relaunch(); err != nil {
		return err
	}
	if err := cl.WaitOK(60 * time.Second); err != nil {
		return err
	}
	if err := armRepl(p); err != nil {
		return err
	}
	if _, err := valkeytest.Do(r.Addr, "CLIENT", "KILL", "TYPE", "replica"); err != nil {
		return err
	}
	if err := waitLinks(cl); err != nil {
		return err
	}
	t.LossyFailovers++
	return nil
}
