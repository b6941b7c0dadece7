package telemetry

// counters is every number lockproxy reports about itself, once: each row
// has one name and one meaning, and the three renderers — /metrics
// (Collector, prometheus.go), INFO lockproxy and LOCKPROXY STATS
// (StatLines, lines.go) — iterate it. A row reads its samples from the
// Numbers the proxy filled in at render time; nothing here runs on a
// command's path.
//
// /metrics shows a row as lockproxy_<metric> with its labels. INFO and
// STATS show it on the lines row.Info names: a sample adds to the line its
// labels map to, so a line is the sum of the series that map to it (INFO's
// upstream_connections is lockproxy_upstream_connections summed over kind,
// its grants is lockproxy_grants_total summed over rule). The commands_
// and upstream_errors_ lines are one per label the Numbers carry (every
// family, every reason but ok). docs/operations.md lists the rows;
// testdata/*.golden hold the names, help texts and INFO lines, which never
// change: dashboards and alerts use them.
var counters = NewTable([]Row[*Numbers]{
	{Info: Text("lockproxy_version"), Text: func(n *Numbers) string { return n.Version }},
	{Metric: "build_info", Help: "Always 1; the version label is lockproxy's version.", Kind: KindGauge, Labels: []string{"version"},
		Read: func(n *Numbers, e Emit) { e(1, n.Version) }},
	{Info: One("uptime_in_seconds"), Kind: KindGauge,
		Read: func(n *Numbers, e Emit) { e(n.UptimeSeconds) }},
	{Metric: "clients", Help: "Client connections open now.", Kind: KindGauge, Info: One("connected_clients"),
		Read: func(n *Numbers, e Emit) { e(n.Clients) }},
	{Metric: "clients_rejected_total", Help: "Client connections refused because maxclients was reached.", Info: One("rejected_clients"),
		Read: func(n *Numbers, e Emit) { e(n.Rejected) }},
	{Metric: "maxclients", Help: "The maxclients setting: client connections served at once before more are refused.", Kind: KindGauge, Info: One("maxclients"),
		Read: func(n *Numbers, e Emit) { e(n.MaxClients) }},
	{Metric: "dedicated_sessions", Help: "Client connections that have an upstream connection of their own now (MULTI, blocking commands, subscriptions, AUTH as another user).", Kind: KindGauge, Info: One("dedicated_sessions"),
		Read: func(n *Numbers, e Emit) { e(n.Dedicated) }},
	{Metric: "upstream_connections", Help: "Open connections to Valkey, by Kind: shared (multiplexed) or dedicated (one client's).", Kind: KindGauge, Labels: []string{"kind"}, Info: One("upstream_connections"),
		Read: func(n *Numbers, e Emit) {
			e(n.SharedUpstream, "shared")
			e(n.Dedicated, "dedicated")
		}},
	{Metric: "upstream_dials_total", Help: "Attempts to open a shared connection to Valkey, by result: ok or error. Past the pool's first dials, each one is a reconnect.", Labels: []string{"result"},
		Info: ByLabel(0, "ok", "upstream_dials", "error", "upstream_dial_failures"),
		Read: func(n *Numbers, e Emit) {
			e(n.Dials, "ok")
			e(n.DialErrors, "error")
		}},
	{Metric: "upstream_up", Help: "1 while Valkey answers as configured (reason ok), else 0 with the reason: unreachable, timeout, tls_mismatch, certificate, auth, permission or error. Checked at scrape time when no connection was made in the last second.", Kind: KindGauge, Labels: []string{"reason"},
		Read: func(n *Numbers, e Emit) {
			if !n.Probed {
				return
			}
			if n.Up {
				e(1, n.UpReason)
			} else {
				e(0, n.UpReason)
			}
		}},
	{Metric: "upstream_errors_total", Help: "Failed dials and lost connections to Valkey, by reason: unreachable, timeout (no answer in time, a reply past upstream.reply_timeout included), tls_mismatch, certificate, auth, permission or error.", Labels: []string{"reason"},
		Info: Prefixed(0, "upstream_errors_"),
		Read: func(n *Numbers, e Emit) {
			for _, c := range n.UpstreamErrors {
				e(c.N, c.Label)
			}
		}},
	{Metric: "upstream_failed_commands_total", Help: "Commands whose connection to Valkey failed or timed out before their reply came: each was answered with an UPSTREAM error.", Info: One("upstream_failed_commands"),
		Read: func(n *Numbers, e Emit) { e(n.UpstreamFailedCommands) }},
	{Metric: "client_bytes_total", Help: "Bytes exchanged with clients, by direction: in (commands read) or out (replies written).", Labels: []string{"direction"},
		Info: ByLabel(0, "in", "client_input_bytes", "out", "client_output_bytes"),
		Read: func(n *Numbers, e Emit) {
			e(n.ClientIn, "in")
			e(n.ClientOut, "out")
		}},
	{Metric: "commands_total", Help: "Commands handled, by family: forward, lock (decided by a lock rule), dedicated, pubsub, replication, connection, admin or server.", Labels: []string{"family"},
		Info: Prefixed(0, "commands_"),
		Read: func(n *Numbers, e Emit) {
			for _, c := range n.Commands {
				e(c.N, c.Label)
			}
		}},
	{Metric: "upstream_round_trip_seconds", Help: "Time from a command's queueing on a connection to Valkey to its reply's arrival, by the command's family.", Kind: KindHistogram, Labels: []string{"family"},
		Info: One("upstream_round_trip"),
		Hist: func(n *Numbers, e EmitHist) {
			for _, d := range n.RoundTrips {
				e(d.Snapshot, d.Label)
			}
		}},
	{Metric: "command_total", Help: "Commands handled, by command name: Valkey's own, lower case, or unknown for a name not in Valkey's command table.", Labels: []string{"command"},
		Read: func(n *Numbers, e Emit) {
			eachCommand(n, func(l int, name string) {
				if v := n.PerCommand.Total(l); v > 0 {
					e(v, name)
				}
			})
		}},
	{Metric: "command_errors_total", Help: "Error replies clients got, by command name and the error's code word (ERR, WRONGTYPE, NOTOWNER ..., other for a word not listed).", Labels: []string{"command", "code"},
		Read: func(n *Numbers, e Emit) {
			eachCommand(n, func(l int, name string) {
				for c, code := range ErrorCodes {
					if v := n.PerCommand.Errors(l, c); v > 0 {
						e(v, name, code)
					}
				}
			})
		}},
	{Metric: "command_duration_seconds", Help: "Time from a command's first byte read to its reply handed to the client's socket, as the client sees it, by command name.", Kind: KindHistogram, Labels: []string{"command"},
		Hist: func(n *Numbers, e EmitHist) {
			eachCommand(n, func(l int, name string) {
				if h := n.PerCommand.Latency(l); h.Count > 0 {
					e(h, name)
				}
			})
		}},
	{Metric: "slow_commands_total", Help: "Commands whose reply took at least slowlog.threshold (LOCKPROXY SLOWLOG keeps the newest).",
		Read: func(n *Numbers, e Emit) { e(n.SlowCommands) }},
	{Metric: "certificate_not_after_timestamp_seconds", Help: "When each certificate in force expires (its notAfter, Unix seconds), by certificate: client-listener, client-ca, upstream-client, upstream-ca. Read at start and at each reload.", Kind: KindGauge, Labels: []string{"certificate"},
		Read: func(n *Numbers, e Emit) {
			for _, c := range n.Certificates {
				e(c.N, c.Label)
			}
		}},
	{Metric: "lock_rules", Help: "Lock rules in force.", Kind: KindGauge, Info: One("lock_rules"),
		Read: func(n *Numbers, e Emit) { e(n.LockRules) }},
	{Metric: "grants_total", Help: "Locks acquired through the proxy (SET NX that took the lock).", Labels: []string{"rule"}, Info: One("grants"),
		Read: perRule(func(rs *RuleStats) int64 { return rs.Grants.Load() })},
	{Metric: "contention_total", Help: "SET NX attempts that found the lock taken.", Labels: []string{"rule"}, Info: One("contention"),
		Read: perRule(func(rs *RuleStats) int64 { return rs.Contention.Load() })},
	// rewritten is INFO's sum of the two rows after it.
	{Info: One("rewritten"),
		Read: perRule(func(rs *RuleStats) int64 { return rs.Released.Load() + rs.Renewed.Load() })},
	{Metric: "token_checked_releases_total", Help: "Releases (DEL, UNLINK) that ran token-checked.", Labels: []string{"rule"}, Info: One("token_checked_releases"),
		Read: perRule(func(rs *RuleStats) int64 { return rs.Released.Load() })},
	{Metric: "token_checked_renewals_total", Help: "Lease changes (PEXPIRE, EXPIRE, GETEX, PERSIST, the holder's SET) that ran token-checked.", Labels: []string{"rule"}, Info: One("token_checked_renewals"),
		Read: perRule(func(rs *RuleStats) int64 { return rs.Renewed.Load() })},
	{Metric: "lock_events_total", Help: "Lock events, as recorded in the audit ring (LOCKPROXY AUDIT), by rule and outcome.", Labels: []string{"rule", "outcome"},
		Info: ByLabel(1, string(OutcomeRefused), "refused", string(OutcomeObserved), "observed"),
		Read: func(n *Numbers, e Emit) {
			n.Locks.Rules.Each(func(label string, rs *RuleStats) {
				for i, oc := range AllOutcomes {
					e(rs.Outcomes[i].Load(), label, string(oc))
				}
			})
		}},
	{Metric: "refusals_total", Help: "Commands the proxy refused, by rule and the error's code word (NOTOWNER, TOKENRELEASE, LOCKED, UNFENCED).", Labels: []string{"rule", "kind"},
		Info: LowerPrefixed(1, "refused_", RefusalKinds...),
		Read: func(n *Numbers, e Emit) {
			n.Locks.Rules.Each(func(label string, rs *RuleStats) {
				for _, kc := range rs.RefusalCounts() {
					e(kc.N, label, kc.Kind)
				}
			})
		}},
	{Metric: "successor_deletions_prevented_total", Help: "Releases or overwrites that would have removed another owner's lock and did not.", Labels: []string{"rule"}, Info: One("successor_deletions_prevented"),
		Read: perRule(func(rs *RuleStats) int64 { return rs.Prevented.Load() })},
	{Metric: "successor_deletions_total", Help: "Forwarded deletes (release: observe, unknown_owner: forward) that removed another owner's lock.", Labels: []string{"rule"}, Info: One("successor_deletions"),
		Read: perRule(func(rs *RuleStats) int64 { return rs.Outcome(OutcomeSuccessorDeleted) })},
	{Metric: "lapsed_leases_total", Help: "Releases through this instance that came after their grant's lease ran out: late_releases_total summed over rules.", Info: One("lapsed_leases"),
		Read: func(n *Numbers, e Emit) { e(n.Locks.All.Lapsed.Load()) }},
	{Metric: "late_releases_total", Help: "Token-checked releases that came after the holder's lease had run out.", Labels: []string{"rule"}, Info: One("late_releases"),
		Read: perRule(func(rs *RuleStats) int64 { return rs.Lapsed.Load() })},
	{Metric: "stale_fenced_writes_refused_total", Help: "Writes to guarded keys refused by the fence because a newer grant exists.", Labels: []string{"rule"}, Info: One("stale_fenced_writes_refused"),
		Read: perRule(func(rs *RuleStats) int64 { return rs.Outcome(OutcomeStaleRefused) })},
	{Metric: "lock_hold_seconds", Help: "Time from acquisition to token-checked release.", Kind: KindHistogram, Labels: []string{"rule"}, Info: One("hold_time"),
		Hist: func(n *Numbers, e EmitHist) {
			n.Locks.Rules.Each(func(label string, rs *RuleStats) { e(rs.Hold.Snapshot(), label) })
		}},
	{Metric: "lock_wait_seconds", Help: "Time from an owner's first contended SET NX to its acquisition of the lock (0 when the first try succeeded).", Kind: KindHistogram, Labels: []string{"rule"}, Info: One("wait_time"),
		Hist: func(n *Numbers, e EmitHist) {
			n.Locks.Rules.Each(func(label string, rs *RuleStats) { e(rs.Wait.Snapshot(), label) })
		}},
	{Metric: "admin_auth_failures_total", Help: "LOCKPROXY AUTH attempts with a wrong user or password.", Info: One("admin_auth_failures"),
		Read: func(n *Numbers, e Emit) { e(n.AdminAuthFailures) }},
	{Metric: "admin_auth_rate_limited_total", Help: "LOCKPROXY AUTH attempts refused unchecked because their client address failed too often.", Info: One("admin_auth_rate_limited"),
		Read: func(n *Numbers, e Emit) { e(n.AdminAuthLimited) }},
	{Metric: "config_reloads_total", Help: "Configuration reloads (SIGHUP, LOCKPROXY RELOAD), by result: ok or error.", Labels: []string{"result"},
		Info: ByLabel(0, "ok", "config_reloads", "error", "config_reload_failures"),
		Read: func(n *Numbers, e Emit) {
			e(n.Reloads, "ok")
			e(n.ReloadFailures, "error")
		}},
	{Info: Text("last_reload"), Text: func(n *Numbers) string {
		switch {
		case !n.ReloadRan:
			return "none"
		case n.ReloadError != "":
			return "error: " + n.ReloadError
		}
		return "ok"
	}},
	{Metric: "config_last_reload_successful", Help: "0 while the last reload failed (the file on disk is not the configuration in force), else 1.", Kind: KindGauge,
		Read: func(n *Numbers, e Emit) {
			if n.ReloadError != "" {
				e(0)
				return
			}
			e(1)
		}},
	{Metric: "log_messages_total", Help: "Warnings and errors logged (an unreachable upstream, a client dropped for not reading its replies, a failed reload ...), by level.", Labels: []string{"level"},
		Info: ByLabel(0, "warn", "log_warnings", "error", "log_errors"),
		Read: func(n *Numbers, e Emit) {
			e(n.LogWarnings, "warn")
			e(n.LogErrors, "error")
		}},
	{Metric: "audit_events_dropped_total", Help: "Lock events whose log line and audit-file line were dropped because the writer's queue was full (a slow log or disk); LOCKPROXY AUDIT still has them.", Info: One("audit_events_dropped"),
		Read: func(n *Numbers, e Emit) { e(n.AuditDropped) }},
	{Metric: "epoch", Help: "The epoch this instance mints fencing tokens under (docs/failover.md): a token's high bits; it rises with every change of primary.", Kind: KindGauge, Info: One("epoch"),
		Read: func(n *Numbers, e Emit) { e(n.Epoch) }},
	{Metric: "grants_lost_total", Help: "Grants found lost in a change of primary: the holder's release, renewal or LOCKPROXY FENCE found no record of a grant it was given under an older epoch.", Info: One("grants_lost"),
		Read: func(n *Numbers, e Emit) { e(n.GrantsLost) }},
	{Metric: "grants_undone_total", Help: "Acquisitions undone, and answered as not taken, because fewer replicas than the rule's durability asks for acknowledged them in time.", Info: One("grants_undone"),
		Read: func(n *Numbers, e Emit) { e(n.GrantsUndone) }},
	{Metric: "durable_writes_short_total", Help: "Renewals, fenced writes and scripts under a rule's durability answered NOTDURABLE: fewer replicas than it asks for acknowledged them in time.", Info: One("durable_writes_short"),
		Read: func(n *Numbers, e Emit) { e(n.DurableShort) }},

	// The cluster's rows: no sample and no INFO line for a single primary.
	{Metric: "cluster_primaries", Help: "Primaries in the cluster's slot map the proxy uses.", Kind: KindGauge, Info: ClusterOnly(One("cluster_primaries")),
		Read: ifCluster(func(n *Numbers, cl *ClusterNumbers, e Emit) { e(cl.Primaries) })},
	{Metric: "cluster_slots_served", Help: "Hash slots a primary serves in the proxy's map (16384 when the cluster is whole).", Kind: KindGauge, Info: ClusterOnly(One("cluster_slots_served")),
		Read: ifCluster(func(n *Numbers, cl *ClusterNumbers, e Emit) { e(cl.SlotsServed) })},
	{Metric: "cluster_map_changes_total", Help: "Slot maps installed (the first, and each change two nodes agreed on).", Info: ClusterOnly(One("cluster_map_changes")),
		Read: ifCluster(func(n *Numbers, cl *ClusterNumbers, e Emit) { e(cl.MapChanges) })},
	{Metric: "cluster_map_unconfirmed_total", Help: "Topology reads after which no second node confirmed the slot map a node gave.", Info: ClusterOnly(One("cluster_map_unconfirmed")),
		Read: ifCluster(func(n *Numbers, cl *ClusterNumbers, e Emit) { e(cl.MapUnconfirmed) })},
	{Metric: "cluster_redirects_followed_total", Help: "MOVED and ASK replies the proxy followed for its clients, by kind.", Labels: []string{"kind"},
		Info: ClusterOnly(ByLabel(0, "moved", "cluster_moved_followed", "ask", "cluster_ask_followed")),
		Read: ifCluster(func(n *Numbers, cl *ClusterNumbers, e Emit) {
			e(cl.Moved, "moved")
			e(cl.Asked, "ask")
		})},
	{Metric: "cluster_tryagain_retries_total", Help: "TRYAGAIN replies retried (a multi-key command during a slot's migration).", Info: ClusterOnly(One("cluster_tryagain_retries")),
		Read: ifCluster(func(n *Numbers, cl *ClusterNumbers, e Emit) { e(cl.TryAgain) })},
	{Metric: "cluster_split_commands_total", Help: "Commands split per slot or fanned out to every primary.", Info: ClusterOnly(One("cluster_split_commands")),
		Read: ifCluster(func(n *Numbers, cl *ClusterNumbers, e Emit) { e(cl.Splits) })},
	{Metric: "cluster_shard_subscriptions_followed_total", Help: "Sharded subscriptions the proxy moved to their slot's new primary.", Info: ClusterOnly(One("cluster_shard_subscriptions_followed")),
		Read: ifCluster(func(n *Numbers, cl *ClusterNumbers, e Emit) { e(cl.ShardFollows) })},
})

// perRule reads one RuleStats counter for every rule label seen.
func perRule(get func(*RuleStats) int64) func(*Numbers, Emit) {
	return func(n *Numbers, e Emit) {
		n.Locks.Rules.Each(func(label string, rs *RuleStats) { e(get(rs), label) })
	}
}

// eachCommand calls f for every command label the numbers count.
func eachCommand(n *Numbers, f func(l int, name string)) {
	if n.PerCommand == nil {
		return
	}
	for l := 0; l < n.PerCommand.Len() && l < len(n.CommandLabels); l++ {
		f(l, n.CommandLabels[l])
	}
}

// ifCluster reads a cluster row, which has no sample for a single primary.
func ifCluster(f func(*Numbers, *ClusterNumbers, Emit)) func(*Numbers, Emit) {
	return func(n *Numbers, e Emit) {
		if n.Cluster != nil {
			f(n, n.Cluster, e)
		}
	}
}

// StatLines are the lines of LOCKPROXY STATS and INFO lockproxy read from
// n: the rows in order, each sample added to its line.
func StatLines(n *Numbers) []Line { return counters.Lines(n, n.Cluster != nil) }
