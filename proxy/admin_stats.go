package proxy

import (
	"context"
	"log/slog"
	"net"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockproxy/lockproxy/policy"
	"github.com/lockproxy/lockproxy/rewrite"
)

// ops is the proxy's operational state: what the LOCKPROXY commands, INFO
// lockproxy and /metrics report beyond the core counters in stats, the admin
// logins, the running configuration and the audit file. Everything here is
// read far more often than it is written, and none of it is on the path of a
// command that touches no lock.
type ops struct {
	started time.Time

	// logins are the admin credentials in force; swapped on reload.
	logins    atomic.Pointer[adminLogins]
	authed    sync.Map // *session → adminLogin: sessions that gave LOCKPROXY AUTH
	authLimit *authLimiter

	authFailures atomic.Int64
	authLimited  atomic.Int64 // AUTH attempts refused by the failure limit

	// Dials of shared upstream connections, by result.
	dials, dialErrors atomic.Int64

	// Per-rule counters, by the rule's pattern (so they survive a reload
	// that keeps the pattern), and totals across rules.
	rules sync.Map // string → *ruleStats
	all   ruleStats

	// First contention of each (owner, key) still waiting to acquire.
	waitMu sync.Mutex
	waits  map[waitKey]time.Time
	// waitSwept is when a full waits table was last swept: at most once a
	// second, so a flood of contended acquisitions does not sweep it each.
	waitSwept time.Time

	bytesIn, bytesOut atomic.Int64
	logWarn, logError atomic.Int64

	// Configuration, for CONFIG and RELOAD.
	reloadMu       sync.Mutex
	boot           *policy.Config                // as the process started: listener/upstream settings
	current        atomic.Pointer[policy.Config] // as last loaded
	reloads        atomic.Int64
	reloadErrors   atomic.Int64
	lastReload     atomic.Pointer[reloadStatus]
	pendingRestart atomic.Pointer[[]string]

	// writer logs events and appends them to the audit file, off the
	// reply path.
	writer *eventWriter
}

type reloadStatus struct {
	at  time.Time
	err string
}

type waitKey struct{ owner, key string }

const maxWaits = 1 << 16

// ruleStats counts what happened under one lock rule.
type ruleStats struct {
	grants     atomic.Int64 // acquisitions
	contention atomic.Int64 // SET NX that found the lock taken
	released   atomic.Int64 // releases run token-checked (blind DEL/UNLINK rewritten)
	renewed    atomic.Int64 // lease changes run token-checked
	lapsed     atomic.Int64 // releases that came after the lease ran out
	prevented  atomic.Int64 // successor deletions prevented (rewritten to a no-op, or refused)
	outcomes   [numOutcomes]atomic.Int64
	refusalsMu sync.Mutex
	refusals   map[string]*atomic.Int64 // by the refusal's code word
	hold, wait histogram
}

// Outcomes in the order they are reported.
var outcomes = [...]Outcome{OutcomeRewritten, OutcomeRefused, OutcomeObserved,
	OutcomeSuccessorPrevented, OutcomeSuccessorDeleted, OutcomeFlushed, OutcomeStaleRefused}

const numOutcomes = len(outcomes)

func outcomeIndex(o Outcome) int {
	for i, x := range outcomes {
		if x == o {
			return i
		}
	}
	return -1
}

// refusalKinds are always reported, even at zero, so dashboards and scripts
// can rely on them: the code words of the errors the proxy refuses commands
// with (safe release and fencing). Fenced writes the fence refuses inside
// Valkey (STALE) are counted apart, as stale_write_refused events.
var refusalKinds = []string{"NOTOWNER", "TOKENRELEASE", "LOCKED", "UNFENCED"}

// outcome is how many events of an outcome the rule (or the total) saw.
func (rs *ruleStats) outcome(o Outcome) int64 { return rs.outcomes[outcomeIndex(o)].Load() }

func (rs *ruleStats) refusal(kind string) *atomic.Int64 {
	rs.refusalsMu.Lock()
	defer rs.refusalsMu.Unlock()
	if rs.refusals == nil {
		rs.refusals = map[string]*atomic.Int64{}
	}
	c := rs.refusals[kind]
	if c == nil {
		c = new(atomic.Int64)
		rs.refusals[kind] = c
	}
	return c
}

// refusalCounts returns every refusal kind with its count, the fixed kinds
// first.
func (rs *ruleStats) refusalCounts() []kindCount {
	rs.refusalsMu.Lock()
	defer rs.refusalsMu.Unlock()
	out := make([]kindCount, 0, len(refusalKinds)+len(rs.refusals))
	for _, k := range refusalKinds {
		var n int64
		if c := rs.refusals[k]; c != nil {
			n = c.Load()
		}
		out = append(out, kindCount{k, n})
	}
	var extra []string
	for k := range rs.refusals {
		known := false
		for _, f := range refusalKinds {
			known = known || f == k
		}
		if !known {
			extra = append(extra, k)
		}
	}
	sort.Strings(extra)
	for _, k := range extra {
		out = append(out, kindCount{k, rs.refusals[k].Load()})
	}
	return out
}

type kindCount struct {
	kind string
	n    int64
}

// noRule labels what happened outside any rule (FLUSHALL, FLUSHDB).
const noRule = "(none)"

func ruleLabel(r *policy.Rule) string {
	if r == nil {
		return noRule
	}
	return r.Pattern.String()
}

func (o *ops) rule(r *policy.Rule) *ruleStats {
	label := ruleLabel(r)
	if v, ok := o.rules.Load(label); ok {
		return v.(*ruleStats)
	}
	v, _ := o.rules.LoadOrStore(label, &ruleStats{})
	return v.(*ruleStats)
}

// eachRule calls f for every rule label seen so far, in label order.
func (o *ops) eachRule(f func(label string, rs *ruleStats)) {
	type entry struct {
		label string
		rs    *ruleStats
	}
	var list []entry
	o.rules.Range(func(k, v any) bool {
		list = append(list, entry{k.(string), v.(*ruleStats)})
		return true
	})
	sort.Slice(list, func(i, j int) bool { return list[i].label < list[j].label })
	for _, e := range list {
		f(e.label, e.rs)
	}
}

func newOps(opts *Options) (*ops, error) {
	o := &ops{started: time.Now(), waits: map[waitKey]time.Time{}, authLimit: newAuthLimiter()}
	o.logins.Store(newAdminLogins(opts.Admin.Password, opts.Admin.Users))
	opts.Logger = slog.New(&countingHandler{h: opts.Logger.Handler(), o: o})
	var audit *auditFile
	if opts.Log.AuditFile != "" {
		a, err := openAudit(opts.Log.AuditFile, int64(opts.Log.AuditMaxSize), opts.Log.AuditKeep)
		if err != nil {
			return nil, err
		}
		audit = a
	}
	o.writer = newEventWriter(opts.Logger, audit)
	return o, nil
}

func (o *ops) close() { o.writer.close() }

// Hooks called from apply (lockplan.go) as replies come in.

// contended records a SET NX that found the lock taken.
func (p *Proxy) contended(e *rewrite.Effect, now time.Time) {
	p.ops.rule(e.Rule).contention.Add(1)
	p.ops.all.contention.Add(1)
	o := p.ops
	k := waitKey{e.Owner, string(e.Key)}
	o.waitMu.Lock()
	defer o.waitMu.Unlock()
	if _, ok := o.waits[k]; ok {
		return
	}
	if len(o.waits) >= maxWaits && now.Sub(o.waitSwept) >= time.Second {
		o.waitSwept = now
		for wk, t := range o.waits {
			if now.Sub(t) > 10*time.Minute {
				delete(o.waits, wk)
			}
		}
	}
	if len(o.waits) >= maxWaits {
		return // full: this wait goes unmeasured
	}
	o.waits[k] = now
}

// granted records an acquisition and how long its owner waited for it (0
// when its first try succeeded).
func (p *Proxy) granted(e *rewrite.Effect, now time.Time) {
	o := p.ops
	var wait time.Duration
	o.waitMu.Lock()
	if len(o.waits) > 0 { // an uncontended grant builds no key to look up
		k := waitKey{e.Owner, string(e.Key)}
		if t, ok := o.waits[k]; ok {
			wait = now.Sub(t)
			delete(o.waits, k)
		}
	}
	o.waitMu.Unlock()
	rs := o.rule(e.Rule)
	rs.grants.Add(1)
	rs.wait.observe(wait)
	o.all.grants.Add(1)
	o.all.wait.observe(wait)
}

// released counts a release that ran token-checked: how long the lock was
// held and whether the release came after the lease ran out, as the
// Release script read them from the owner's record.
func (p *Proxy) released(e *rewrite.Effect) {
	rs := p.ops.rule(e.Rule)
	rs.released.Add(1)
	p.ops.all.released.Add(1)
	if e.Lapsed {
		rs.lapsed.Add(1)
		p.ops.all.lapsed.Add(1)
	}
	if e.Held >= 0 {
		rs.hold.observe(e.Held)
		p.ops.all.hold.observe(e.Held)
	}
}

// record keeps an event: the audit ring and the counters by rule and
// outcome at once, its log line and audit-file line through the event
// writer's queue.
func (p *Proxy) record(ev Event, e *rewrite.Effect) {
	p.events.add(ev)
	rs := p.ops.rule(e.Rule)
	if i := outcomeIndex(ev.Outcome); i >= 0 {
		rs.outcomes[i].Add(1)
		p.ops.all.outcomes[i].Add(1)
	}
	switch e.Kind {
	case rewrite.Renewed:
		rs.renewed.Add(1)
		p.ops.all.renewed.Add(1)
	case rewrite.Refused:
		kind := refusalKind(e.Reason)
		rs.refusal(kind).Add(1)
		p.ops.all.refusal(kind).Add(1)
	}
	// As stats.successorPrevented counts them: a release that found the
	// lock another owner's, or a refusal while another owner held it.
	if ev.Outcome == OutcomeSuccessorPrevented || (e.Kind == rewrite.Refused && e.Holder != "") {
		rs.prevented.Add(1)
		p.ops.all.prevented.Add(1)
	}
	p.ops.writer.push(ev)
}

// refusalKind is the code word an error starts with (NOTOWNER, LOCKED, ...).
func refusalKind(reason string) string {
	w, _, _ := strings.Cut(reason, " ")
	if w == "" {
		return "OTHER"
	}
	return w
}

// histogram is a fixed-bucket histogram of durations, written with atomics
// only, read as a snapshot for STATS and /metrics.
// countConn counts a client connection's bytes into the proxy's totals.
type countConn struct {
	net.Conn
	o     *ops
	since time.Time
}

func (o *ops) conn(nc net.Conn) net.Conn { return &countConn{Conn: nc, o: o, since: time.Now()} }

func (c *countConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.o.bytesIn.Add(int64(n))
	}
	return n, err
}

// unwrap gives the socket beneath, for writes that do not wait (direct.go);
// countWrite counts what those wrote.
func (c *countConn) unwrap() net.Conn { return c.Conn }
func (c *countConn) countWrite(n int) { c.o.bytesOut.Add(int64(n)) }

func (c *countConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	if n > 0 {
		c.o.bytesOut.Add(int64(n))
	}
	return n, err
}

// countingHandler counts warnings and errors logged: every failure the proxy
// meets (an upstream it cannot reach, a client dropped for not reading, a
// reload refused ...) is logged at one of these levels.
type countingHandler struct {
	h slog.Handler
	o *ops
}

func (c *countingHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn || c.h.Enabled(ctx, l)
}

func (c *countingHandler) Handle(ctx context.Context, r slog.Record) error {
	switch {
	case r.Level >= slog.LevelError:
		c.o.logError.Add(1)
	case r.Level >= slog.LevelWarn:
		c.o.logWarn.Add(1)
	}
	if !c.h.Enabled(ctx, r.Level) {
		return nil
	}
	return c.h.Handle(ctx, r)
}

func (c *countingHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &countingHandler{h: c.h.WithAttrs(as), o: c.o}
}

func (c *countingHandler) WithGroup(name string) slog.Handler {
	return &countingHandler{h: c.h.WithGroup(name), o: c.o}
}

// sessionEnded forgets a session's admin login and its dedicated connection.
// It runs on the session's goroutine after serve returned.
func (p *Proxy) sessionEnded(s *session) {
	p.ops.authed.Delete(s)
	if s.ded != nil {
		p.stats.dedicated.Add(-1)
	}
}

// upstreamConns counts the live shared upstream connections.
func (p *Proxy) upstreamConns() int64 {
	p.poolMu.Lock()
	pools := make([]*pool, 0, len(p.pools))
	for _, pl := range p.pools {
		pools = append(pools, pl)
	}
	p.poolMu.Unlock()
	var n int64
	for _, pl := range pools {
		for i := range pl.slots {
			sl := &pl.slots[i]
			sl.mu.Lock()
			if sl.c != nil && !sl.c.dead.Load() {
				n++
			}
			sl.mu.Unlock()
		}
	}
	return n
}

// lapsedTotal is every release through this instance that came after its
// grant's lease ran out. (A lease that runs out with no release at all is
// Valkey's to expire: no instance sees it.)
func (p *Proxy) lapsedTotal() int64 { return p.ops.all.lapsed.Load() }
