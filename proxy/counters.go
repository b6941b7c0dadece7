package proxy

import (
	"context"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lockproxy/lockproxy/telemetry"
)

// counterTable is every number the proxy reports about itself, once: each
// row has one name and one meaning, and the three renderers — /metrics
// (metrics.go), INFO lockproxy and LOCKPROXY STATS (info.go) — iterate it.
// A row's samples are read from atomics (and histograms built on them) at
// render time; nothing here runs on a command's path.
//
// /metrics shows a row as lockproxy_<metric> with its labels. INFO and
// STATS show it on the lines row.info names: a sample adds to the line its
// labels map to, so a line is the sum of the series that map to it (INFO's
// upstream_connections is lockproxy_upstream_connections summed over kind,
// its grants is lockproxy_grants_total summed over rule). docs/operations.md
// lists the rows.
var counterTable = []counterRow{
	{info: text("lockproxy_version"), text: func(p *Proxy) string { return p.version() }},
	{metric: "build_info", help: "Always 1; the version label is lockproxy's version.", kind: gaugeRow, labels: []string{"version"},
		read: func(p *Proxy, e emitFn) { e(1, p.version()) }},
	{info: one("uptime_in_seconds"), kind: gaugeRow,
		read: func(p *Proxy, e emitFn) { e(int64(time.Since(p.ops.started).Seconds())) }},
	{metric: "clients", help: "Client connections open now.", kind: gaugeRow, info: one("connected_clients"),
		read: func(p *Proxy, e emitFn) { e(p.stats.clients.Load()) }},
	{metric: "clients_rejected_total", help: "Client connections refused because maxclients was reached.", info: one("rejected_clients"),
		read: func(p *Proxy, e emitFn) { e(p.stats.rejected.Load()) }},
	{metric: "maxclients", help: "The maxclients setting: client connections served at once before more are refused.", kind: gaugeRow, info: one("maxclients"),
		read: func(p *Proxy, e emitFn) { e(int64(p.opts.MaxClients)) }},
	{metric: "dedicated_sessions", help: "Client connections that have an upstream connection of their own now (MULTI, blocking commands, subscriptions, AUTH as another user).", kind: gaugeRow, info: one("dedicated_sessions"),
		read: func(p *Proxy, e emitFn) { e(p.stats.dedicated.Load()) }},
	{metric: "upstream_connections", help: "Open connections to Valkey, by kind: shared (multiplexed) or dedicated (one client's).", kind: gaugeRow, labels: []string{"kind"}, info: one("upstream_connections"),
		read: func(p *Proxy, e emitFn) {
			e(p.upstreamConns(), "shared")
			e(p.stats.dedicated.Load(), "dedicated")
		}},
	{metric: "upstream_dials_total", help: "Attempts to open a shared connection to Valkey, by result: ok or error. Past the pool's first dials, each one is a reconnect.", labels: []string{"result"},
		info: byLabel(0, "ok", "upstream_dials", "error", "upstream_dial_failures"),
		read: func(p *Proxy, e emitFn) {
			e(p.ops.dials.Load(), "ok")
			e(p.ops.dialErrors.Load(), "error")
		}},
	{metric: "upstream_up", help: "1 while Valkey answers as configured (reason ok), else 0 with the reason: unreachable, timeout, tls_mismatch, certificate, auth, permission or error. Checked at scrape time when no connection was made in the last second.", kind: gaugeRow, labels: []string{"reason"},
		read: func(p *Proxy, e emitFn) {
			if v := p.upstreamVerdict(context.Background(), false); v.up() {
				e(1, v.reason)
			} else {
				e(0, v.reason)
			}
		}},
	{metric: "upstream_errors_total", help: "Failed dials and lost connections to Valkey, by reason: unreachable, timeout (no answer in time, a reply past upstream.reply_timeout included), tls_mismatch, certificate, auth, permission or error.", labels: []string{"reason"},
		info: prefixed(0, "upstream_errors_", upstreamReasonList[1:]...),
		read: func(p *Proxy, e emitFn) {
			for i, r := range upstreamReasonList[1:] {
				e(p.ops.upErrors[i+1].Load(), r)
			}
		}},
	{metric: "upstream_failed_commands_total", help: "Commands whose connection to Valkey failed or timed out before their reply came: each was answered with an UPSTREAM error.", info: one("upstream_failed_commands"),
		read: func(p *Proxy, e emitFn) { e(p.ops.upFailedCmds.Load()) }},
	{metric: "client_bytes_total", help: "Bytes exchanged with clients, by direction: in (commands read) or out (replies written).", labels: []string{"direction"},
		info: byLabel(0, "in", "client_input_bytes", "out", "client_output_bytes"),
		read: func(p *Proxy, e emitFn) {
			e(p.ops.bytesIn.Load(), "in")
			e(p.ops.bytesOut.Load(), "out")
		}},
	{metric: "commands_total", help: "Commands handled, by family: forward, lock (decided by a lock rule), dedicated, pubsub, replication, connection, admin or server.", labels: []string{"family"},
		info: prefixed(0, "commands_", familyNames[:]...),
		read: func(p *Proxy, e emitFn) {
			for f := range p.ops.commands {
				e(p.ops.commands[f].Load(), familyNames[f])
			}
		}},
	{metric: "upstream_round_trip_seconds", help: "Time from a command's queueing on a connection to Valkey to its reply's arrival, by the command's family.", kind: histogramRow, labels: []string{"family"},
		info: one("upstream_round_trip"),
		hist: func(p *Proxy, e histFn) {
			for f := family(0); f < numFamilies; f++ {
				e(p.ops.roundTrip.snapshot(f), familyNames[f])
			}
		}},
	{metric: "lock_rules", help: "Lock rules in force.", kind: gaugeRow, info: one("lock_rules"),
		read: func(p *Proxy, e emitFn) { e(int64(p.decider.Load().Rules.Len())) }},
	{metric: "grants_total", help: "Locks acquired through the proxy (SET NX that took the lock).", labels: []string{"rule"}, info: one("grants"),
		read: perRule(func(rs *ruleStats) int64 { return rs.grants.Load() })},
	{metric: "contention_total", help: "SET NX attempts that found the lock taken.", labels: []string{"rule"}, info: one("contention"),
		read: perRule(func(rs *ruleStats) int64 { return rs.contention.Load() })},
	// rewritten is INFO's sum of the two rows after it.
	{info: one("rewritten"),
		read: perRule(func(rs *ruleStats) int64 { return rs.released.Load() + rs.renewed.Load() })},
	{metric: "token_checked_releases_total", help: "Releases (DEL, UNLINK) that ran token-checked.", labels: []string{"rule"}, info: one("token_checked_releases"),
		read: perRule(func(rs *ruleStats) int64 { return rs.released.Load() })},
	{metric: "token_checked_renewals_total", help: "Lease changes (PEXPIRE, EXPIRE, GETEX, PERSIST, the holder's SET) that ran token-checked.", labels: []string{"rule"}, info: one("token_checked_renewals"),
		read: perRule(func(rs *ruleStats) int64 { return rs.renewed.Load() })},
	{metric: "lock_events_total", help: "Lock events, as recorded in the audit ring (LOCKPROXY AUDIT), by rule and outcome.", labels: []string{"rule", "outcome"},
		info: byLabel(1, string(OutcomeRefused), "refused", string(OutcomeObserved), "observed"),
		read: func(p *Proxy, e emitFn) {
			p.ops.eachRule(func(label string, rs *ruleStats) {
				for i, oc := range outcomes {
					e(rs.outcomes[i].Load(), label, string(oc))
				}
			})
		}},
	{metric: "refusals_total", help: "Commands the proxy refused, by rule and the error's code word (NOTOWNER, TOKENRELEASE, LOCKED, UNFENCED).", labels: []string{"rule", "kind"},
		info: lowerPrefixed(1, "refused_", refusalKinds...),
		read: func(p *Proxy, e emitFn) {
			p.ops.eachRule(func(label string, rs *ruleStats) {
				for _, kc := range rs.refusalCounts() {
					e(kc.n, label, kc.kind)
				}
			})
		}},
	{metric: "successor_deletions_prevented_total", help: "Releases or overwrites that would have removed another owner's lock and did not.", labels: []string{"rule"}, info: one("successor_deletions_prevented"),
		read: perRule(func(rs *ruleStats) int64 { return rs.prevented.Load() })},
	{metric: "successor_deletions_total", help: "Forwarded deletes (release: observe, unknown_owner: forward) that removed another owner's lock.", labels: []string{"rule"}, info: one("successor_deletions"),
		read: perRule(func(rs *ruleStats) int64 { return rs.outcome(OutcomeSuccessorDeleted) })},
	{metric: "lapsed_leases_total", help: "Releases through this instance that came after their grant's lease ran out: late_releases_total summed over rules.", info: one("lapsed_leases"),
		read: func(p *Proxy, e emitFn) { e(p.lapsedTotal()) }},
	{metric: "late_releases_total", help: "Token-checked releases that came after the holder's lease had run out.", labels: []string{"rule"}, info: one("late_releases"),
		read: perRule(func(rs *ruleStats) int64 { return rs.lapsed.Load() })},
	{metric: "stale_fenced_writes_refused_total", help: "Writes to guarded keys refused by the fence because a newer grant exists.", labels: []string{"rule"}, info: one("stale_fenced_writes_refused"),
		read: perRule(func(rs *ruleStats) int64 { return rs.outcome(OutcomeStaleRefused) })},
	{metric: "lock_hold_seconds", help: "Time from acquisition to token-checked release.", kind: histogramRow, labels: []string{"rule"}, info: one("hold_time"),
		hist: func(p *Proxy, e histFn) {
			p.ops.eachRule(func(label string, rs *ruleStats) { e(rs.hold.Snapshot(), label) })
		}},
	{metric: "lock_wait_seconds", help: "Time from an owner's first contended SET NX to its acquisition of the lock (0 when the first try succeeded).", kind: histogramRow, labels: []string{"rule"}, info: one("wait_time"),
		hist: func(p *Proxy, e histFn) {
			p.ops.eachRule(func(label string, rs *ruleStats) { e(rs.wait.Snapshot(), label) })
		}},
	{metric: "admin_auth_failures_total", help: "LOCKPROXY AUTH attempts with a wrong user or password.", info: one("admin_auth_failures"),
		read: func(p *Proxy, e emitFn) { e(p.ops.authFailures.Load()) }},
	{metric: "admin_auth_rate_limited_total", help: "LOCKPROXY AUTH attempts refused unchecked because their client address failed too often.", info: one("admin_auth_rate_limited"),
		read: func(p *Proxy, e emitFn) { e(p.ops.authLimited.Load()) }},
	{metric: "config_reloads_total", help: "Configuration reloads (SIGHUP, LOCKPROXY RELOAD), by result: ok or error.", labels: []string{"result"},
		info: byLabel(0, "ok", "config_reloads", "error", "config_reload_failures"),
		read: func(p *Proxy, e emitFn) {
			e(p.ops.reloads.Load(), "ok")
			e(p.ops.reloadErrors.Load(), "error")
		}},
	{info: text("last_reload"), text: func(p *Proxy) string {
		r := p.ops.lastReload.Load()
		switch {
		case r == nil:
			return "none"
		case r.err != "":
			return "error: " + r.err
		}
		return "ok"
	}},
	{metric: "config_last_reload_successful", help: "0 while the last reload failed (the file on disk is not the configuration in force), else 1.", kind: gaugeRow,
		read: func(p *Proxy, e emitFn) {
			if r := p.ops.lastReload.Load(); r != nil && r.err != "" {
				e(0)
				return
			}
			e(1)
		}},
	{metric: "log_messages_total", help: "Warnings and errors logged (an unreachable upstream, a client dropped for not reading its replies, a failed reload ...), by level.", labels: []string{"level"},
		info: byLabel(0, "warn", "log_warnings", "error", "log_errors"),
		read: func(p *Proxy, e emitFn) {
			e(p.ops.logWarn.Load(), "warn")
			e(p.ops.logError.Load(), "error")
		}},
	{metric: "audit_events_dropped_total", help: "Lock events whose log line and audit-file line were dropped because the writer's queue was full (a slow log or disk); LOCKPROXY AUDIT still has them.", info: one("audit_events_dropped"),
		read: func(p *Proxy, e emitFn) { e(p.ops.writer.Dropped()) }},
	{metric: "epoch", help: "The epoch this instance mints fencing tokens under (docs/failover.md): a token's high bits; it rises with every change of primary.", kind: gaugeRow, info: one("epoch"),
		read: func(p *Proxy, e emitFn) { e(p.currentEpoch()) }},
	{metric: "grants_lost_total", help: "Grants found lost in a change of primary: the holder's release, renewal or LOCKPROXY FENCE found no record of a grant it was given under an older epoch.", info: one("grants_lost"),
		read: func(p *Proxy, e emitFn) { e(p.lostGrants.Load()) }},
	{metric: "grants_undone_total", help: "Acquisitions undone, and answered as not taken, because fewer replicas than the rule's durability asks for acknowledged them in time.", info: one("grants_undone"),
		read: func(p *Proxy, e emitFn) { e(p.durable.undone.Load()) }},
	{metric: "durable_writes_short_total", help: "Renewals, fenced writes and scripts under a rule's durability answered NOTDURABLE: fewer replicas than it asks for acknowledged them in time.", info: one("durable_writes_short"),
		read: func(p *Proxy, e emitFn) { e(p.durable.short.Load()) }},

	// The cluster's rows: no sample and no INFO line for a single primary.
	{metric: "cluster_primaries", help: "Primaries in the cluster's slot map the proxy uses.", kind: gaugeRow, info: clusterOnly(one("cluster_primaries")),
		read: ifCluster(func(p *Proxy, cl *clusterState, e emitFn) { n, _ := p.mapSize(); e(n) })},
	{metric: "cluster_slots_served", help: "Hash slots a primary serves in the proxy's map (16384 when the cluster is whole).", kind: gaugeRow, info: clusterOnly(one("cluster_slots_served")),
		read: ifCluster(func(p *Proxy, cl *clusterState, e emitFn) { _, n := p.mapSize(); e(n) })},
	{metric: "cluster_map_changes_total", help: "Slot maps installed (the first, and each change two nodes agreed on).", info: clusterOnly(one("cluster_map_changes")),
		read: ifCluster(func(p *Proxy, cl *clusterState, e emitFn) { e(cl.refreshes.Load()) })},
	{metric: "cluster_map_unconfirmed_total", help: "Topology reads after which no second node confirmed the slot map a node gave.", info: clusterOnly(one("cluster_map_unconfirmed")),
		read: ifCluster(func(p *Proxy, cl *clusterState, e emitFn) { e(cl.disagreements.Load()) })},
	{metric: "cluster_redirects_followed_total", help: "MOVED and ASK replies the proxy followed for its clients, by kind.", labels: []string{"kind"},
		info: clusterOnly(byLabel(0, "moved", "cluster_moved_followed", "ask", "cluster_ask_followed")),
		read: ifCluster(func(p *Proxy, cl *clusterState, e emitFn) {
			e(cl.moved.Load(), "moved")
			e(cl.asked.Load(), "ask")
		})},
	{metric: "cluster_tryagain_retries_total", help: "TRYAGAIN replies retried (a multi-key command during a slot's migration).", info: clusterOnly(one("cluster_tryagain_retries")),
		read: ifCluster(func(p *Proxy, cl *clusterState, e emitFn) { e(cl.tryAgain.Load()) })},
	{metric: "cluster_split_commands_total", help: "Commands split per slot or fanned out to every primary.", info: clusterOnly(one("cluster_split_commands")),
		read: ifCluster(func(p *Proxy, cl *clusterState, e emitFn) { e(cl.splits.Load()) })},
	{metric: "cluster_shard_subscriptions_followed_total", help: "Sharded subscriptions the proxy moved to their slot's new primary.", info: clusterOnly(one("cluster_shard_subscriptions_followed")),
		read: ifCluster(func(p *Proxy, cl *clusterState, e emitFn) { e(cl.shardFollows.Load()) })},
}

type rowKind uint8

const (
	counterRowKind rowKind = iota // a count that only rises (the zero value)
	gaugeRow                      // a value now
	histogramRow                  // a distribution of durations
)

type (
	emitFn func(v int64, labels ...string)
	histFn func(h telemetry.Snapshot, labels ...string)
)

// counterRow is one number the proxy reports.
type counterRow struct {
	// metric is the name on /metrics after "lockproxy_"; "" when only INFO
	// and STATS show the row. Names never change: dashboards and alerts
	// use them.
	metric string
	help   string
	kind   rowKind
	labels []string
	// info maps the row's samples onto INFO / STATS lines; nil: /metrics
	// only.
	info *infoLines
	// read gives the row's samples (counters and gauges), hist its
	// histograms, text the value of a text line (INFO and STATS only).
	read func(p *Proxy, e emitFn)
	hist func(p *Proxy, e histFn)
	text func(p *Proxy) string
}

// infoLines says which INFO / STATS line each sample of a row adds to.
type infoLines struct {
	// names are always shown, at 0 when no sample adds to them, in order.
	names []string
	// line names a sample's line from its labels; nil: names[0]. A sample
	// whose line is "" is not shown.
	line func(labels []string) string
	// cluster: shown only in front of a cluster.
	cluster bool
}

func one(name string) *infoLines  { return &infoLines{names: []string{name}} }
func text(name string) *infoLines { return &infoLines{names: []string{name}} }

func clusterOnly(l *infoLines) *infoLines { l.cluster = true; return l }

// byLabel maps label i's values to lines: pairs of value, line name.
func byLabel(i int, pairs ...string) *infoLines {
	m := map[string]string{}
	l := &infoLines{}
	for j := 0; j+1 < len(pairs); j += 2 {
		m[pairs[j]] = pairs[j+1]
		l.names = append(l.names, pairs[j+1])
	}
	l.line = func(labels []string) string { return m[labels[i]] }
	return l
}

// prefixed shows label i's value after a prefix: one line per value.
func prefixed(i int, prefix string, always ...string) *infoLines {
	l := &infoLines{line: func(labels []string) string { return prefix + labels[i] }}
	for _, v := range always {
		l.names = append(l.names, prefix+v)
	}
	return l
}

// lowerPrefixed is prefixed with the value lower-cased (refused_notowner).
func lowerPrefixed(i int, prefix string, always ...string) *infoLines {
	l := &infoLines{line: func(labels []string) string { return prefix + strings.ToLower(labels[i]) }}
	for _, v := range always {
		l.names = append(l.names, prefix+strings.ToLower(v))
	}
	return l
}

// perRule reads one ruleStats counter for every rule label seen.
func perRule(get func(*ruleStats) int64) func(*Proxy, emitFn) {
	return func(p *Proxy, e emitFn) {
		p.ops.eachRule(func(label string, rs *ruleStats) { e(get(rs), label) })
	}
}

func ifCluster(f func(*Proxy, *clusterState, emitFn)) func(*Proxy, emitFn) {
	return func(p *Proxy, e emitFn) {
		if p.cl != nil {
			f(p, p.cl, e)
		}
	}
}

// seedRules gives every rule in force its counters, so that its series and
// lines exist from the start, at 0.
func (p *Proxy) seedRules() {
	rules := p.decider.Load().Rules.All()
	for i := range rules {
		p.ops.rule(&rules[i])
	}
}

// descOf is a row's Prometheus description.
func (r *counterRow) descOf() *prometheus.Desc {
	return prometheus.NewDesc("lockproxy_"+r.metric, r.help, r.labels, nil)
}
