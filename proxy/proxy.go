package proxy

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockproxy/lockproxy/clients"
	"github.com/lockproxy/lockproxy/commands"
	"github.com/lockproxy/lockproxy/config"
	"github.com/lockproxy/lockproxy/evloop"
	"github.com/lockproxy/lockproxy/locks"
	"github.com/lockproxy/lockproxy/resp"
	"github.com/lockproxy/lockproxy/rewrite"
	"github.com/lockproxy/lockproxy/scriptcheck"
	"github.com/lockproxy/lockproxy/telemetry"
	"github.com/lockproxy/lockproxy/upstream"
	"github.com/redis/go-redis/v9"
)

// Proxy serves RESP clients in front of Valkey: one primary, given by its
// address or found through Sentinel, or the primaries of a Valkey Cluster.
type Proxy struct {
	// own: the proxy's own set-up commands, kept out of MONITOR (clients.OwnLines).
	own    clients.OwnLines
	vids   clients.IDs // Valkey's ids of the sessions' own connections and relays (clientids.go)
	opts   Options
	limits resp.Limits // what a client may send, from the configuration's limits
	log    *slog.Logger

	// requireAuth is true when Valkey refuses commands from a connection
	// that has not logged in. The shared connections are logged in with the
	// proxy's credentials, so the proxy must then ask its clients for them,
	// or it would open Valkey to anyone who can reach the proxy.
	requireAuth bool

	pools  upstream.Pools[poolKey] // the shared connections by key (pool.go)
	logins clients.Logins          // the clients' own logins Valkey accepted (logins.go)

	mu        sync.Mutex
	sessions  map[*session]struct{}
	listeners map[net.Listener]struct{}
	loops     *evloop.Group // started with the first client

	nextID       atomic.Uint64
	closed       atomic.Bool
	shuttingDown atomic.Bool
	draining     atomic.Bool   // Drain was called: /readyz says 503, clients are still served
	force        chan struct{} // closed when sessions must stop waiting for replies
	forceOnce    sync.Once

	wg  sync.WaitGroup // upstream connection goroutines
	swg sync.WaitGroup // session goroutines

	// Lock rules: the decider (swapped whole on reload), Valkey's command
	// table inside it, the grant records and the audit ring.
	decider atomic.Pointer[rewrite.Decider]
	known   atomic.Pointer[commands.Table] // derived from the table (package commands)
	// byLabel: the table's command of each label, for the slow log's key
	// count (cmdstats.go).
	byLabel atomic.Pointer[labelCommands]
	// pausedUntil: the end of a CLIENT PAUSE sent through the proxy, in
	// Unix nanoseconds; 0 when none (pause.go).
	pausedUntil atomic.Int64
	// adminCmds is admin_commands in force (gate.go): 0 admin, 1 refuse,
	// 2 forward; a reload sets it.
	adminCmds  atomic.Int32
	tableMu    sync.Mutex
	tableTried time.Time
	// tableLoading: a probe's background read of the table is under way.
	tableLoading atomic.Bool
	tableErr     error         // why the last load failed
	side         *redis.Client // for COMMAND and COMMAND GETKEYSANDFLAGS
	events       *telemetry.Ring
	// instance names this process in connection owners (conn:<instance>-<id>):
	// new at every start, so no two instances, nor two runs of one, share one.
	instance string

	// With Sentinel: the primary's address now, and the watcher's stop.
	sentinel    upstream.Sentinel
	stopWatcher context.CancelFunc
	// locks: what this instance saw of the primary's epoch and the clues
	// it passes to the grants, the durable grants' undoing, and their
	// counts (package locks, through lockhost.go).
	locks *locks.Keeper

	// upTLS is the TLS configuration for Valkey now; nil for plaintext.
	// ReloadCertificates replaces it.
	upTLS atomic.Pointer[tls.Config]
	// tlsGiven: Options.UpstreamTLS was given, not built from files.
	tlsGiven bool
	// lisTLS is the client listener's TLS configuration now (ListenerTLS).
	lisTLS atomic.Pointer[tls.Config]
	// life ends when Shutdown starts: background work that talks to
	// Valkey (reading the command table) stops waiting then.
	life    context.Context
	endLife context.CancelFunc

	// cl is the cluster behind the proxy (cluster.go); nil for one primary.
	cl *clusterState

	// up is what the upstream connections need of the proxy (uphost.go),
	// dialer how their sockets are opened, connector where they go and
	// what each is told, and the upstream's health (updial.go).
	up        upstream.Host
	dialer    upstream.Dialer
	connector upstream.Connector

	stats stats
	ops   *ops // admin commands, INFO lockproxy, metrics, reload (ops.go)
}

// stats counts connections. What lock traffic did is counted once, by rule
// and in total, in ops (telemetry.LockStats, fed by lockhost.go): INFO,
// LOCKPROXY STATS and /metrics all read it there.
type stats struct {
	clients   atomic.Int64
	dedicated atomic.Int64
	rejected  atomic.Int64
}

// New checks the options and probes Valkey once to learn whether it requires
// clients to log in. An unreachable Valkey is not an error: clients get an
// error naming it until it comes up.
func New(opts Options) (*Proxy, error) {
	if opts.Upstream.Addr == "" && len(opts.Upstream.Cluster.Seeds) == 0 {
		return nil, errors.New("proxy: no upstream address")
	}
	opts.setDefaults()
	if opts.Upstream.Sentinel.Master != "" && len(opts.Upstream.Sentinel.Addrs) == 0 {
		return nil, errors.New("proxy: sentinel master without sentinel addresses")
	}
	rules, err := opts.Config.Rules()
	if err != nil {
		return nil, err
	}
	tlsGiven := opts.UpstreamTLS != nil
	o, err := newOps(&opts)
	if err != nil {
		return nil, err
	}
	limits := resp.DefaultLimits()
	limits.MaxBulkLen = int64(opts.ProtoMaxBulkLen)
	limits.MaxQueryBuffer = int64(opts.ClientQueryBufferLimit)
	p := &Proxy{
		ops:       o,
		opts:      opts,
		limits:    limits,
		log:       opts.Logger,
		sessions:  map[*session]struct{}{},
		listeners: map[net.Listener]struct{}{},
		force:     make(chan struct{}),
		instance:  newInstanceID(),
		events:    telemetry.NewRing(opts.EventRing),
	}
	p.loops = evloop.NewGroup(opts.EventLoops, evloop.Config{Log: p.log,
		Idle: opts.ClientIdleTimeout.D(), BusyPoll: opts.BusyPoll.D(), BytesIn: &o.traffic.In})
	p.life, p.endLife = context.WithCancel(context.Background())
	var sentinel *upstream.Sentinel // its config epoch floors the epoch
	if opts.Upstream.Sentinel.Master != "" {
		sentinel = &p.sentinel
	}
	p.locks = locks.New(lockHost{p}, p.log, &p.wg, sentinel)
	p.dialer = upstream.Dialer{Timeout: opts.Upstream.DialTimeout.D(), TLS: p.upstreamTLS,
		Alive: func() bool { return p.life.Err() == nil }}
	p.upTLS.Store(opts.UpstreamTLS)
	p.tlsGiven = tlsGiven
	p.up = p.newUpHost()
	p.connector = p.newConnector()
	p.pools.Config = p.poolConfig
	if err := p.loadCertificates(); err != nil {
		o.close()
		return nil, err
	}
	if s := opts.Upstream.Sentinel; s.Master != "" {
		p.sentinel = upstream.Sentinel{Addrs: s.Addrs, Master: s.Master, Username: s.Username, Password: s.Password,
			Timeout: opts.Upstream.DialTimeout.D()}
		p.connector.Target.Sentinel = &p.sentinel
		ctx, cancel := context.WithCancel(context.Background())
		p.stopWatcher = cancel
		p.wg.Add(1)
		go p.watchSentinel(ctx)
	}
	if len(opts.Upstream.Cluster.Seeds) > 0 {
		p.startCluster()
	}
	requireAuth, reached := p.probeAuth()
	p.requireAuth = requireAuth
	p.adminCmds.Store(adminCmdsCode(opts.AdminCommands))
	p.decider.Store(&rewrite.Decider{Rules: rules, OnFlush: opts.OnFlush, Scripts: rewrite.SeedKnown(scriptcheck.NewCache(0)), Keep: rewrite.KeepArg(opts.KeepLapsed), Cluster: p.cl != nil, Epoch: &p.locks.Clue,
		Gate: opts.AdminCommands != config.AdminCommandsForward})
	// The side client dials only when used: for the command table once
	// rules exist (now or after a reload), LOCKPROXY LOCKS and /healthz.
	p.side = redis.NewClient(&redis.Options{
		Addr: opts.Upstream.Addr, Username: opts.Upstream.Username, Password: opts.Upstream.Password,
		// A client's command may wait for it (the command table): no
		// longer than reply_timeout, the dial included, and the
		// context's deadline is kept (go-redis ignores it by default).
		DialTimeout: min(opts.Upstream.DialTimeout.D(), opts.Upstream.ReplyTimeout.D()), Protocol: 2,
		PoolSize: 2, MaxRetries: 1, DisableIdentity: true, ContextTimeoutEnabled: true,
		DialerRetries: 1, // go-redis's own 5 would multiply the bound
		// Where the shared connections go: with Sentinel, the primary now.
		Dialer: func(ctx context.Context, network, _ string) (net.Conn, error) {
			addr, err := p.upstreamAddr(ctx)
			if err != nil {
				return nil, err
			}
			nc, err := p.dialer.Dial(ctx, addr)
			if err != nil {
				p.connector.Target.Forget()
			}
			return nc, err
		},
	})
	p.ops.admin = p.newAdmin()
	if reached && (p.decider.Load().Active() || p.cl != nil) {
		p.loadTable() // a cluster routes by keys, rules or not
	} else {
		// Without rules the table only sharpens routing (package commands);
		// with an upstream not reached, the start does not wait for it.
		p.wg.Add(1)
		go func() { defer p.wg.Done(); p.loadTable() }()
	}
	return p, nil
}

// probeAuth sends PING without logging in: -NOAUTH means Valkey requires
// authentication. When Valkey cannot be reached, the configured password is
// taken as the answer (fail closed), and reached is false. All of it takes
// at most dial_timeout (Sentinel asked, dial, TLS, the answer), and a
// failure is noted at once (upstream.Health logs it, naming the setting):
// the start never waits silently.
func (p *Proxy) probeAuth() (required, reached bool) {
	fallback := p.opts.Upstream.Password != ""
	wait := p.opts.Upstream.DialTimeout.D()
	ctx, cancel := context.WithTimeout(p.life, wait)
	defer cancel()
	failed := func(addr string, err error) (bool, bool) {
		if upstream.IsTimeout(err) || ctx.Err() != nil {
			err = &upstream.SlowError{Wait: wait, Setting: "upstream.dial_timeout"}
		}
		p.connector.Health.Note(addr, err)
		return fallback, false
	}
	addr, err := p.upstreamAddr(ctx)
	if err != nil {
		return failed(p.tableAddr(), err)
	}
	nc, err := p.dialer.Dial(ctx, addr)
	if err != nil {
		return failed(addr, err)
	}
	defer nc.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = nc.SetDeadline(dl)
	}
	if _, err := nc.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
		return failed(addr, err)
	}
	line, err := bufio.NewReader(nc).ReadString('\n')
	if err != nil {
		return failed(addr, err)
	}
	return strings.HasPrefix(line, "-NOAUTH"), true
}

// Serve accepts clients on l until l is closed or the proxy shuts down.
func (p *Proxy) Serve(l net.Listener) error {
	p.mu.Lock()
	if p.shuttingDown.Load() {
		p.mu.Unlock()
		return upstream.ErrClosed
	}
	p.listeners[l] = struct{}{}
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.listeners, l)
		p.mu.Unlock()
	}()
	var delay time.Duration
	for {
		nc, err := l.Accept()
		if err != nil {
			if p.shuttingDown.Load() {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				// Out of file descriptors and similar: back off, as
				// net/http does, instead of spinning.
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				time.Sleep(delay)
				continue
			}
			return err
		}
		delay = 0
		p.accept(nc)
	}
}

func (p *Proxy) accept(nc net.Conn) {
	p.mu.Lock()
	if p.shuttingDown.Load() {
		p.mu.Unlock()
		nc.Close()
		return
	}
	if len(p.sessions) >= p.opts.MaxClients {
		p.mu.Unlock()
		p.stats.rejected.Add(1)
		// As Valkey does: one error, then close.
		_ = nc.SetWriteDeadline(time.Now().Add(time.Second))
		_, _ = nc.Write(resp.AppendError(nil, errMaxClients))
		nc.Close()
		return
	}
	s := newSession(p, p.ops.traffic.Conn(nc), p.nextID.Add(1))
	p.sessions[s] = struct{}{}
	p.swg.Add(1)
	lp := p.loops.Client()
	p.mu.Unlock()
	p.stats.clients.Add(1)
	if lp == nil || !s.joinLoop(lp) {
		go s.serveGo()
	}
}

// sessionDone forgets a session that has finished.
func (p *Proxy) sessionDone(s *session) {
	p.mu.Lock()
	delete(p.sessions, s)
	p.mu.Unlock()
	p.stats.clients.Add(-1)
	p.sessionEnded(s)
	p.swg.Done()
}

// newInstanceID is a random name for this process, for its connection
// owners: a connection id alone would repeat after a restart, and between
// two instances in front of one Valkey.
func newInstanceID() string {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return strconv.FormatInt(time.Now().UnixNano(), 36)
	}
	return hex.EncodeToString(b[:])
}

// Shutdown stops accepting clients, lets every session finish the replies it
// is owed, and closes everything. When ctx ends first, the remaining sessions
// are closed at once and ctx's error is returned.
func (p *Proxy) Shutdown(ctx context.Context) error {
	p.endLife()
	p.mu.Lock()
	p.shuttingDown.Store(true)
	for l := range p.listeners {
		l.Close()
	}
	// Wake every session blocked reading its client; it then finishes what
	// it already read.
	for s := range p.sessions {
		_ = s.nc.SetReadDeadline(time.Now())
	}
	p.loops.Wake()
	p.mu.Unlock()

	done := make(chan struct{})
	go func() { p.swg.Wait(); close(done) }()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = ctx.Err()
		p.forceOnce.Do(func() { close(p.force) })
		p.mu.Lock()
		for s := range p.sessions {
			s.abort()
		}
		p.mu.Unlock()
		<-done
	}
	p.closed.Store(true)
	if p.stopWatcher != nil {
		p.stopWatcher()
	}
	p.stopCluster()
	p.pools.CloseAll() // before the loops: a loop closes the connections it reads
	p.loops.Close()
	p.wg.Wait()
	if p.side != nil {
		p.side.Close()
	}
	p.ops.close()
	return err
}

// Close shuts down without waiting for replies.
func (p *Proxy) Close() error {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := p.Shutdown(ctx)
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// Clients reports the number of connected clients.
func (p *Proxy) Clients() int64 { return p.stats.clients.Load() }

func (p *Proxy) dialErrorText(err error) string {
	var re *upstream.ReplyError
	if errors.As(err, &re) {
		return re.Msg
	}
	name := p.upstreamName()
	var ne *upstream.NodeError
	if p.cl != nil && errors.As(err, &ne) {
		name = ne.Addr
	}
	var se *upstream.SlowError
	if errors.As(err, &se) {
		return errUpstreamSlow(name, se.Wait)
	}
	return errUpstreamDial(name, err)
}

func (p *Proxy) lostErrorText(c *upstream.Conn) string {
	err := c.Err()
	if c.Dedicated() {
		return errDedicatedLost(c.Addr(), err)
	}
	return errUpstreamLost(c.Addr(), err)
}

// Events returns up to n recent lock events, newest first.
func (p *Proxy) Events(n int) []Event { return p.events.Recent(n, nil) }
