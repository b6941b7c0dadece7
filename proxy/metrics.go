package proxy

import (
	"context"
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// MetricsHandler serves /metrics (Prometheus text format), /livez (200
// while the process serves HTTP: it does not depend on Valkey), /healthz
// (200 while Valkey answers PING) and /readyz (200 while the proxy accepts
// clients, Valkey answers as configured and lock commands can be decided;
// otherwise 503 and the reason). Every metric is read from the same counters
// LOCKPROXY STATS and INFO lockproxy report, at scrape time.
func (p *Proxy) MetricsHandler() http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		&collector{p: p},
	)
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/livez", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("/healthz", p.healthz)
	mux.HandleFunc("/readyz", p.readyz)
	return mux
}

func (p *Proxy) healthz(w http.ResponseWriter, r *http.Request) {
	if v := p.upstreamVerdict(r.Context(), true); !v.up() {
		http.Error(w, "upstream "+p.tableAddr()+" "+v.String(), http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintln(w, "ok")
}

func (p *Proxy) readyz(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	listening := len(p.listeners)
	p.mu.Unlock()
	switch {
	case p.shuttingDown.Load():
		http.Error(w, "shutting down", http.StatusServiceUnavailable)
		return
	case listening == 0:
		http.Error(w, "not accepting clients yet", http.StatusServiceUnavailable)
		return
	}
	if v := p.upstreamVerdict(r.Context(), true); !v.up() {
		http.Error(w, "upstream "+p.tableAddr()+" "+v.String(), http.StatusServiceUnavailable)
		return
	}
	if d := p.decider.Load(); d.Active() && d.Table == nil && p.loadTable().Table == nil {
		http.Error(w, "Valkey's command table not read yet: lock commands cannot be decided", http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintln(w, "ready")
}

// Metric names are stable: dashboards and alerts depend on them.
var (
	mUpstreamUp  = desc("upstream_up", "1 while Valkey answers as configured (reason ok), else 0 with the reason: unreachable, timeout, tls_mismatch, certificate, auth, permission or error. Checked at scrape time when no connection was made in the last second.", "reason")
	mUpErrors    = desc("upstream_errors_total", "Failed dials and lost connections to Valkey, by reason: unreachable, timeout (no answer in time, a reply past upstream.reply_timeout included), tls_mismatch, certificate, auth, permission or error.", "reason")
	mBuildInfo   = desc("build_info", "Always 1; the version label is lockproxy's version.", "version")
	mClients     = desc("clients", "Client connections open now.")
	mRejected    = desc("clients_rejected_total", "Client connections refused because maxclients was reached.")
	mMaxClients  = desc("maxclients", "The maxclients setting: client connections served at once before more are refused.")
	mDedicated   = desc("dedicated_sessions", "Client connections that have an upstream connection of their own now (MULTI, blocking commands, subscriptions, AUTH as another user).")
	mUpstream    = desc("upstream_connections", "Open connections to Valkey, by kind: shared (multiplexed) or dedicated (one client's).", "kind")
	mDials       = desc("upstream_dials_total", "Attempts to open a shared connection to Valkey, by result: ok or error. Past the pool's first dials, each one is a reconnect.", "result")
	mBytes       = desc("client_bytes_total", "Bytes exchanged with clients, by direction: in (commands read) or out (replies written).", "direction")
	mLogRecords  = desc("log_messages_total", "Warnings and errors logged (an unreachable upstream, a client dropped for not reading its replies, a failed reload ...), by level.", "level")
	mDropped     = desc("audit_events_dropped_total", "Lock events whose log line and audit-file line were dropped because the writer's queue was full (a slow log or disk); LOCKPROXY AUDIT still has them.")
	mAuthFail    = desc("admin_auth_failures_total", "LOCKPROXY AUTH attempts with a wrong user or password.")
	mAuthLimited = desc("admin_auth_rate_limited_total", "LOCKPROXY AUTH attempts refused unchecked because their client address failed too often.")
	mReloads     = desc("config_reloads_total", "Configuration reloads (SIGHUP, LOCKPROXY RELOAD), by result: ok or error.", "result")
	mReloadOK    = desc("config_last_reload_successful", "0 while the last reload failed (the file on disk is not the configuration in force), else 1.")
	mRules       = desc("lock_rules", "Lock rules in force.")
	mLapsed      = desc("lapsed_leases_total", "Releases through this instance that came after their grant's lease ran out.")
	mGrants      = desc("grants_total", "Locks acquired through the proxy (SET NX that took the lock).", "rule")
	mContention  = desc("contention_total", "SET NX attempts that found the lock taken.", "rule")
	mReleases    = desc("token_checked_releases_total", "Releases (DEL, UNLINK) that ran token-checked.", "rule")
	mRenewals    = desc("token_checked_renewals_total", "Lease changes (PEXPIRE, EXPIRE, GETEX, PERSIST, the holder's SET) that ran token-checked.", "rule")
	mLateRelease = desc("late_releases_total", "Token-checked releases that came after the holder's lease had run out.", "rule")
	mEvents      = desc("lock_events_total", "Lock events, as recorded in the audit ring (LOCKPROXY AUDIT), by rule and outcome.", "rule", "outcome")
	mRefusals    = desc("refusals_total", "Commands the proxy refused, by rule and the error's code word (NOTOWNER, TOKENRELEASE, LOCKED, UNFENCED).", "rule", "kind")
	mPrevented   = desc("successor_deletions_prevented_total", "Releases or overwrites that would have removed another owner's lock and did not.", "rule")
	mDeleted     = desc("successor_deletions_total", "Forwarded deletes (release: observe, unknown_owner: forward) that removed another owner's lock.", "rule")
	mStale       = desc("stale_fenced_writes_refused_total", "Writes to guarded keys refused by the fence because a newer grant exists.", "rule")
	mHold        = desc("lock_hold_seconds", "Time from acquisition to token-checked release.", "rule")
	mEpoch       = desc("epoch", "The epoch this instance mints fencing tokens under (docs/failover.md): a token's high bits; it rises with every change of primary.")
	mLost        = desc("grants_lost_total", "Grants found lost in a change of primary: the holder's release, renewal or LOCKPROXY FENCE found no record of a grant it was given under an older epoch.")
	mUndone      = desc("grants_undone_total", "Acquisitions undone, and answered as not taken, because fewer replicas than the rule's durability asks for acknowledged them in time.")
	mShort       = desc("durable_writes_short_total", "Renewals and fenced writes under a rule's durability answered NOTDURABLE: fewer replicas than it asks for acknowledged them in time.")
	mWait        = desc("lock_wait_seconds", "Time from an owner's first contended SET NX to its acquisition of the lock (0 when the first try succeeded).", "rule")
)

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc("lockproxy_"+name, help, labels, nil)
}

var allDescs = []*prometheus.Desc{mEpoch, mLost, mUndone, mShort, mUpstreamUp, mUpErrors, mBuildInfo, mClients, mRejected, mMaxClients, mDedicated, mUpstream, mDials, mBytes,
	mLogRecords, mDropped, mAuthFail, mAuthLimited, mReloads, mReloadOK, mRules, mLapsed, mGrants, mContention,
	mReleases, mRenewals, mLateRelease, mEvents, mRefusals, mPrevented, mDeleted, mStale, mHold, mWait}

type collector struct{ p *Proxy }

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range allDescs {
		ch <- d
	}
	for _, d := range clusterDescs {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	p := c.p
	o := p.ops
	gauge := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), labels...)
	}
	counter := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge(mBuildInfo, 1, p.version())
	gauge(mEpoch, p.currentEpoch())
	counter(mLost, p.lostGrants.Load())
	counter(mUndone, p.durable.undone.Load())
	counter(mShort, p.durable.short.Load())
	if v := p.upstreamVerdict(context.Background(), false); v.up() {
		gauge(mUpstreamUp, 1, v.reason)
	} else {
		gauge(mUpstreamUp, 0, v.reason)
	}
	gauge(mClients, p.stats.clients.Load())
	counter(mRejected, p.stats.rejected.Load())
	gauge(mMaxClients, int64(p.opts.MaxClients))
	ded := p.stats.dedicated.Load()
	gauge(mDedicated, ded)
	gauge(mUpstream, p.upstreamConns(), "shared")
	gauge(mUpstream, ded, "dedicated")
	for i, r := range upstreamReasonList[1:] {
		counter(mUpErrors, o.upErrors[i+1].Load(), r)
	}
	counter(mDials, o.dials.Load(), "ok")
	counter(mDials, o.dialErrors.Load(), "error")
	counter(mBytes, o.bytesIn.Load(), "in")
	counter(mBytes, o.bytesOut.Load(), "out")
	counter(mLogRecords, o.logWarn.Load(), "warn")
	counter(mLogRecords, o.logError.Load(), "error")
	counter(mDropped, o.writer.dropped.Load())
	counter(mAuthFail, o.authFailures.Load())
	counter(mAuthLimited, o.authLimited.Load())
	counter(mReloads, o.reloads.Load(), "ok")
	counter(mReloads, o.reloadErrors.Load(), "error")
	reloadOK := int64(1)
	if r := o.lastReload.Load(); r != nil && r.err != "" {
		reloadOK = 0
	}
	gauge(mReloadOK, reloadOK)
	d := p.decider.Load()
	gauge(mRules, int64(d.Rules.Len()))
	counter(mLapsed, p.lapsedTotal())
	p.collectCluster(gauge, counter)

	// Every rule in force has its series from the start, at 0.
	rules := d.Rules.All()
	for i := range rules {
		o.rule(&rules[i])
	}
	o.eachRule(func(label string, rs *ruleStats) {
		counter(mGrants, rs.grants.Load(), label)
		counter(mContention, rs.contention.Load(), label)
		counter(mReleases, rs.released.Load(), label)
		counter(mRenewals, rs.renewed.Load(), label)
		counter(mLateRelease, rs.lapsed.Load(), label)
		counter(mPrevented, rs.prevented.Load(), label)
		for i, oc := range outcomes {
			counter(mEvents, rs.outcomes[i].Load(), label, string(oc))
		}
		counter(mDeleted, rs.outcomes[outcomeIndex(OutcomeSuccessorDeleted)].Load(), label)
		counter(mStale, rs.outcomes[outcomeIndex(OutcomeStaleRefused)].Load(), label)
		for _, kc := range rs.refusalCounts() {
			counter(mRefusals, kc.n, label, kc.kind)
		}
		histogramMetric(ch, mHold, rs.hold.snapshot(), label)
		histogramMetric(ch, mWait, rs.wait.snapshot(), label)
	})
}

func histogramMetric(ch chan<- prometheus.Metric, d *prometheus.Desc, h histSnapshot, labels ...string) {
	buckets := make(map[float64]uint64, len(durationBuckets))
	var cum uint64
	for i, ub := range durationBuckets {
		cum += h.buckets[i]
		buckets[ub] = cum
	}
	ch <- prometheus.MustNewConstHistogram(d, h.count, h.sum, buckets, labels...)
}
