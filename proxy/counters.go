package proxy

import (
	"context"
	"time"

	"github.com/lockproxy/lockproxy/telemetry"
	"github.com/lockproxy/lockproxy/upstream"
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
var counterTable = telemetry.NewTable([]telemetry.Row[*Proxy]{
	{Info: telemetry.Text("lockproxy_version"), Text: func(p *Proxy) string { return p.version() }},
	{Metric: "build_info", Help: "Always 1; the version label is lockproxy's version.", Kind: telemetry.KindGauge, Labels: []string{"version"},
		Read: func(p *Proxy, e telemetry.Emit) { e(1, p.version()) }},
	{Info: telemetry.One("uptime_in_seconds"), Kind: telemetry.KindGauge,
		Read: func(p *Proxy, e telemetry.Emit) { e(int64(time.Since(p.ops.started).Seconds())) }},
	{Metric: "clients", Help: "Client connections open now.", Kind: telemetry.KindGauge, Info: telemetry.One("connected_clients"),
		Read: func(p *Proxy, e telemetry.Emit) { e(p.stats.clients.Load()) }},
	{Metric: "clients_rejected_total", Help: "Client connections refused because maxclients was reached.", Info: telemetry.One("rejected_clients"),
		Read: func(p *Proxy, e telemetry.Emit) { e(p.stats.rejected.Load()) }},
	{Metric: "maxclients", Help: "The maxclients setting: client connections served at once before more are refused.", Kind: telemetry.KindGauge, Info: telemetry.One("maxclients"),
		Read: func(p *Proxy, e telemetry.Emit) { e(int64(p.opts.MaxClients)) }},
	{Metric: "dedicated_sessions", Help: "Client connections that have an upstream connection of their own now (MULTI, blocking commands, subscriptions, AUTH as another user).", Kind: telemetry.KindGauge, Info: telemetry.One("dedicated_sessions"),
		Read: func(p *Proxy, e telemetry.Emit) { e(p.stats.dedicated.Load()) }},
	{Metric: "upstream_connections", Help: "Open connections to Valkey, by Kind: shared (multiplexed) or dedicated (one client's).", Kind: telemetry.KindGauge, Labels: []string{"kind"}, Info: telemetry.One("upstream_connections"),
		Read: func(p *Proxy, e telemetry.Emit) {
			e(p.upstreamConns(), "shared")
			e(p.stats.dedicated.Load(), "dedicated")
		}},
	{Metric: "upstream_dials_total", Help: "Attempts to open a shared connection to Valkey, by result: ok or error. Past the pool's first dials, each one is a reconnect.", Labels: []string{"result"},
		Info: telemetry.ByLabel(0, "ok", "upstream_dials", "error", "upstream_dial_failures"),
		Read: func(p *Proxy, e telemetry.Emit) {
			e(p.ops.dials.Load(), "ok")
			e(p.ops.dialErrors.Load(), "error")
		}},
	{Metric: "upstream_up", Help: "1 while Valkey answers as configured (reason ok), else 0 with the reason: unreachable, timeout, tls_mismatch, certificate, auth, permission or error. Checked at scrape time when no connection was made in the last second.", Kind: telemetry.KindGauge, Labels: []string{"reason"},
		Read: func(p *Proxy, e telemetry.Emit) {
			if v := p.upstreamVerdict(context.Background(), false); v.Up() {
				e(1, v.Reason)
			} else {
				e(0, v.Reason)
			}
		}},
	{Metric: "upstream_errors_total", Help: "Failed dials and lost connections to Valkey, by reason: unreachable, timeout (no answer in time, a reply past upstream.reply_timeout included), tls_mismatch, certificate, auth, permission or error.", Labels: []string{"reason"},
		Info: telemetry.Prefixed(0, "upstream_errors_", upstream.Reasons[1:]...),
		Read: func(p *Proxy, e telemetry.Emit) {
			for i, r := range upstream.Reasons[1:] {
				e(p.connector.Health.Errors[i+1].Load(), r)
			}
		}},
	{Metric: "upstream_failed_commands_total", Help: "Commands whose connection to Valkey failed or timed out before their reply came: each was answered with an UPSTREAM error.", Info: telemetry.One("upstream_failed_commands"),
		Read: func(p *Proxy, e telemetry.Emit) { e(p.ops.upFailedCmds.Load()) }},
	{Metric: "client_bytes_total", Help: "Bytes exchanged with clients, by direction: in (commands read) or out (replies written).", Labels: []string{"direction"},
		Info: telemetry.ByLabel(0, "in", "client_input_bytes", "out", "client_output_bytes"),
		Read: func(p *Proxy, e telemetry.Emit) {
			e(p.ops.traffic.In.Load(), "in")
			e(p.ops.traffic.Out.Load(), "out")
		}},
	{Metric: "commands_total", Help: "Commands handled, by family: forward, lock (decided by a lock rule), dedicated, pubsub, replication, connection, admin or server.", Labels: []string{"family"},
		Info: telemetry.Prefixed(0, "commands_", familyNames[:]...),
		Read: func(p *Proxy, e telemetry.Emit) {
			for f := range p.ops.commands {
				e(p.ops.commands[f].Load(), familyNames[f])
			}
		}},
	{Metric: "upstream_round_trip_seconds", Help: "Time from a command's queueing on a connection to Valkey to its reply's arrival, by the command's family.", Kind: telemetry.KindHistogram, Labels: []string{"family"},
		Info: telemetry.One("upstream_round_trip"),
		Hist: func(p *Proxy, e telemetry.EmitHist) {
			for f := family(0); f < numFamilies; f++ {
				e(p.ops.roundTrip.snapshot(f), familyNames[f])
			}
		}},
	{Metric: "lock_rules", Help: "Lock rules in force.", Kind: telemetry.KindGauge, Info: telemetry.One("lock_rules"),
		Read: func(p *Proxy, e telemetry.Emit) { e(int64(p.decider.Load().Rules.Len())) }},
	{Metric: "grants_total", Help: "Locks acquired through the proxy (SET NX that took the lock).", Labels: []string{"rule"}, Info: telemetry.One("grants"),
		Read: perRule(func(rs *telemetry.RuleStats) int64 { return rs.Grants.Load() })},
	{Metric: "contention_total", Help: "SET NX attempts that found the lock taken.", Labels: []string{"rule"}, Info: telemetry.One("contention"),
		Read: perRule(func(rs *telemetry.RuleStats) int64 { return rs.Contention.Load() })},
	// rewritten is INFO's sum of the two rows after it.
	{Info: telemetry.One("rewritten"),
		Read: perRule(func(rs *telemetry.RuleStats) int64 { return rs.Released.Load() + rs.Renewed.Load() })},
	{Metric: "token_checked_releases_total", Help: "Releases (DEL, UNLINK) that ran token-checked.", Labels: []string{"rule"}, Info: telemetry.One("token_checked_releases"),
		Read: perRule(func(rs *telemetry.RuleStats) int64 { return rs.Released.Load() })},
	{Metric: "token_checked_renewals_total", Help: "Lease changes (PEXPIRE, EXPIRE, GETEX, PERSIST, the holder's SET) that ran token-checked.", Labels: []string{"rule"}, Info: telemetry.One("token_checked_renewals"),
		Read: perRule(func(rs *telemetry.RuleStats) int64 { return rs.Renewed.Load() })},
	{Metric: "lock_events_total", Help: "Lock events, as recorded in the audit ring (LOCKPROXY AUDIT), by rule and outcome.", Labels: []string{"rule", "outcome"},
		Info: telemetry.ByLabel(1, string(OutcomeRefused), "refused", string(OutcomeObserved), "observed"),
		Read: func(p *Proxy, e telemetry.Emit) {
			p.ops.locks.Rules.Each(func(label string, rs *telemetry.RuleStats) {
				for i, oc := range telemetry.AllOutcomes {
					e(rs.Outcomes[i].Load(), label, string(oc))
				}
			})
		}},
	{Metric: "refusals_total", Help: "Commands the proxy refused, by rule and the error's code word (NOTOWNER, TOKENRELEASE, LOCKED, UNFENCED).", Labels: []string{"rule", "kind"},
		Info: telemetry.LowerPrefixed(1, "refused_", telemetry.RefusalKinds...),
		Read: func(p *Proxy, e telemetry.Emit) {
			p.ops.locks.Rules.Each(func(label string, rs *telemetry.RuleStats) {
				for _, kc := range rs.RefusalCounts() {
					e(kc.N, label, kc.Kind)
				}
			})
		}},
	{Metric: "successor_deletions_prevented_total", Help: "Releases or overwrites that would have removed another owner's lock and did not.", Labels: []string{"rule"}, Info: telemetry.One("successor_deletions_prevented"),
		Read: perRule(func(rs *telemetry.RuleStats) int64 { return rs.Prevented.Load() })},
	{Metric: "successor_deletions_total", Help: "Forwarded deletes (release: observe, unknown_owner: forward) that removed another owner's lock.", Labels: []string{"rule"}, Info: telemetry.One("successor_deletions"),
		Read: perRule(func(rs *telemetry.RuleStats) int64 { return rs.Outcome(OutcomeSuccessorDeleted) })},
	{Metric: "lapsed_leases_total", Help: "Releases through this instance that came after their grant's lease ran out: late_releases_total summed over rules.", Info: telemetry.One("lapsed_leases"),
		Read: func(p *Proxy, e telemetry.Emit) { e(p.lapsedTotal()) }},
	{Metric: "late_releases_total", Help: "Token-checked releases that came after the holder's lease had run out.", Labels: []string{"rule"}, Info: telemetry.One("late_releases"),
		Read: perRule(func(rs *telemetry.RuleStats) int64 { return rs.Lapsed.Load() })},
	{Metric: "stale_fenced_writes_refused_total", Help: "Writes to guarded keys refused by the fence because a newer grant exists.", Labels: []string{"rule"}, Info: telemetry.One("stale_fenced_writes_refused"),
		Read: perRule(func(rs *telemetry.RuleStats) int64 { return rs.Outcome(OutcomeStaleRefused) })},
	{Metric: "lock_hold_seconds", Help: "Time from acquisition to token-checked release.", Kind: telemetry.KindHistogram, Labels: []string{"rule"}, Info: telemetry.One("hold_time"),
		Hist: func(p *Proxy, e telemetry.EmitHist) {
			p.ops.locks.Rules.Each(func(label string, rs *telemetry.RuleStats) { e(rs.Hold.Snapshot(), label) })
		}},
	{Metric: "lock_wait_seconds", Help: "Time from an owner's first contended SET NX to its acquisition of the lock (0 when the first try succeeded).", Kind: telemetry.KindHistogram, Labels: []string{"rule"}, Info: telemetry.One("wait_time"),
		Hist: func(p *Proxy, e telemetry.EmitHist) {
			p.ops.locks.Rules.Each(func(label string, rs *telemetry.RuleStats) { e(rs.Wait.Snapshot(), label) })
		}},
	{Metric: "admin_auth_failures_total", Help: "LOCKPROXY AUTH attempts with a wrong user or password.", Info: telemetry.One("admin_auth_failures"),
		Read: func(p *Proxy, e telemetry.Emit) { e(p.ops.admin.AuthFailures.Load()) }},
	{Metric: "admin_auth_rate_limited_total", Help: "LOCKPROXY AUTH attempts refused unchecked because their client address failed too often.", Info: telemetry.One("admin_auth_rate_limited"),
		Read: func(p *Proxy, e telemetry.Emit) { e(p.ops.admin.AuthLimited.Load()) }},
	{Metric: "config_reloads_total", Help: "Configuration reloads (SIGHUP, LOCKPROXY RELOAD), by result: ok or error.", Labels: []string{"result"},
		Info: telemetry.ByLabel(0, "ok", "config_reloads", "error", "config_reload_failures"),
		Read: func(p *Proxy, e telemetry.Emit) {
			e(p.ops.admin.Running.Reloads.Load(), "ok")
			e(p.ops.admin.Running.Failures.Load(), "error")
		}},
	{Info: telemetry.Text("last_reload"), Text: func(p *Proxy) string {
		ran, err := p.ops.admin.Running.LastReload()
		switch {
		case !ran:
			return "none"
		case err != "":
			return "error: " + err
		}
		return "ok"
	}},
	{Metric: "config_last_reload_successful", Help: "0 while the last reload failed (the file on disk is not the configuration in force), else 1.", Kind: telemetry.KindGauge,
		Read: func(p *Proxy, e telemetry.Emit) {
			if _, err := p.ops.admin.Running.LastReload(); err != "" {
				e(0)
				return
			}
			e(1)
		}},
	{Metric: "log_messages_total", Help: "Warnings and errors logged (an unreachable upstream, a client dropped for not reading its replies, a failed reload ...), by level.", Labels: []string{"level"},
		Info: telemetry.ByLabel(0, "warn", "log_warnings", "error", "log_errors"),
		Read: func(p *Proxy, e telemetry.Emit) {
			e(p.ops.logs.Warn.Load(), "warn")
			e(p.ops.logs.Error.Load(), "error")
		}},
	{Metric: "audit_events_dropped_total", Help: "Lock events whose log line and audit-file line were dropped because the writer's queue was full (a slow log or disk); LOCKPROXY AUDIT still has them.", Info: telemetry.One("audit_events_dropped"),
		Read: func(p *Proxy, e telemetry.Emit) { e(p.ops.writer.Dropped()) }},
	{Metric: "epoch", Help: "The epoch this instance mints fencing tokens under (docs/failover.md): a token's high bits; it rises with every change of primary.", Kind: telemetry.KindGauge, Info: telemetry.One("epoch"),
		Read: func(p *Proxy, e telemetry.Emit) { e(p.locks.CurrentEpoch()) }},
	{Metric: "grants_lost_total", Help: "Grants found lost in a change of primary: the holder's release, renewal or LOCKPROXY FENCE found no record of a grant it was given under an older epoch.", Info: telemetry.One("grants_lost"),
		Read: func(p *Proxy, e telemetry.Emit) { e(p.locks.Lost.Load()) }},
	{Metric: "grants_undone_total", Help: "Acquisitions undone, and answered as not taken, because fewer replicas than the rule's durability asks for acknowledged them in time.", Info: telemetry.One("grants_undone"),
		Read: func(p *Proxy, e telemetry.Emit) { e(p.locks.Undone.Load()) }},
	{Metric: "durable_writes_short_total", Help: "Renewals, fenced writes and scripts under a rule's durability answered NOTDURABLE: fewer replicas than it asks for acknowledged them in time.", Info: telemetry.One("durable_writes_short"),
		Read: func(p *Proxy, e telemetry.Emit) { e(p.locks.Short.Load()) }},

	// The cluster's rows: no sample and no INFO line for a single primary.
	{Metric: "cluster_primaries", Help: "Primaries in the cluster's slot map the proxy uses.", Kind: telemetry.KindGauge, Info: telemetry.ClusterOnly(telemetry.One("cluster_primaries")),
		Read: ifCluster(func(p *Proxy, cl *clusterState, e telemetry.Emit) { n, _ := cl.Size(); e(n) })},
	{Metric: "cluster_slots_served", Help: "Hash slots a primary serves in the proxy's map (16384 when the cluster is whole).", Kind: telemetry.KindGauge, Info: telemetry.ClusterOnly(telemetry.One("cluster_slots_served")),
		Read: ifCluster(func(p *Proxy, cl *clusterState, e telemetry.Emit) { _, n := cl.Size(); e(n) })},
	{Metric: "cluster_map_changes_total", Help: "Slot maps installed (the first, and each change two nodes agreed on).", Info: telemetry.ClusterOnly(telemetry.One("cluster_map_changes")),
		Read: ifCluster(func(p *Proxy, cl *clusterState, e telemetry.Emit) { e(cl.Stats.Refreshes.Load()) })},
	{Metric: "cluster_map_unconfirmed_total", Help: "Topology reads after which no second node confirmed the slot map a node gave.", Info: telemetry.ClusterOnly(telemetry.One("cluster_map_unconfirmed")),
		Read: ifCluster(func(p *Proxy, cl *clusterState, e telemetry.Emit) { e(cl.Stats.Disagreements.Load()) })},
	{Metric: "cluster_redirects_followed_total", Help: "MOVED and ASK replies the proxy followed for its clients, by kind.", Labels: []string{"kind"},
		Info: telemetry.ClusterOnly(telemetry.ByLabel(0, "moved", "cluster_moved_followed", "ask", "cluster_ask_followed")),
		Read: ifCluster(func(p *Proxy, cl *clusterState, e telemetry.Emit) {
			e(cl.Stats.Moved.Load(), "moved")
			e(cl.Stats.Asked.Load(), "ask")
		})},
	{Metric: "cluster_tryagain_retries_total", Help: "TRYAGAIN replies retried (a multi-key command during a slot's migration).", Info: telemetry.ClusterOnly(telemetry.One("cluster_tryagain_retries")),
		Read: ifCluster(func(p *Proxy, cl *clusterState, e telemetry.Emit) { e(cl.Stats.TryAgain.Load()) })},
	{Metric: "cluster_split_commands_total", Help: "Commands split per slot or fanned out to every primary.", Info: telemetry.ClusterOnly(telemetry.One("cluster_split_commands")),
		Read: ifCluster(func(p *Proxy, cl *clusterState, e telemetry.Emit) { e(cl.Stats.Splits.Load()) })},
	{Metric: "cluster_shard_subscriptions_followed_total", Help: "Sharded subscriptions the proxy moved to their slot's new primary.", Info: telemetry.ClusterOnly(telemetry.One("cluster_shard_subscriptions_followed")),
		Read: ifCluster(func(p *Proxy, cl *clusterState, e telemetry.Emit) { e(cl.Stats.ShardFollows.Load()) })},
})

// perRule reads one RuleStats counter for every rule label seen.
func perRule(get func(*telemetry.RuleStats) int64) func(*Proxy, telemetry.Emit) {
	return func(p *Proxy, e telemetry.Emit) {
		p.ops.locks.Rules.Each(func(label string, rs *telemetry.RuleStats) { e(get(rs), label) })
	}
}

func ifCluster(f func(*Proxy, *clusterState, telemetry.Emit)) func(*Proxy, telemetry.Emit) {
	return func(p *Proxy, e telemetry.Emit) {
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
		p.ops.locks.Rule(ruleLabel(&rules[i]))
	}
}
