package proxy

import (
	"context"
	"time"

	"github.com/lockproxy/lockproxy/commands"
	"github.com/lockproxy/lockproxy/telemetry"
	"github.com/lockproxy/lockproxy/upstream"
)

// numbers is the proxy's numbers as package telemetry's counter table reads
// them (telemetry/counters.go): read from the atomics at render time, in
// the order of the table's rows, every rule in force among the per-rule
// counters. probe asks Valkey's verdict too, for /metrics only (INFO and
// STATS do not show it). Nothing here is on a command's path.
func (p *Proxy) numbers(probe bool) *telemetry.Numbers {
	p.seedRules()
	n := &telemetry.Numbers{
		Version:       p.version(),
		UptimeSeconds: int64(time.Since(p.ops.started).Seconds()),
		Clients:       p.stats.clients.Load(),
		Rejected:      p.stats.rejected.Load(),
		MaxClients:    int64(p.opts.MaxClients),
		Dedicated:     p.stats.dedicated.Load(),
	}
	n.SharedUpstream = p.upstreamConns()
	n.Dials, n.DialErrors = p.ops.dials.Load(), p.ops.dialErrors.Load()
	if probe {
		v := p.upstreamVerdict(context.Background(), false)
		n.Probed, n.Up, n.UpReason = true, v.Up(), v.Reason
	}
	for i, r := range upstream.Reasons[1:] {
		n.UpstreamErrors = append(n.UpstreamErrors, telemetry.Count{Label: r, N: p.connector.Health.Errors[i+1].Load()})
	}
	n.UpstreamFailedCommands = p.ops.upFailedCmds.Load()
	n.ClientIn, n.ClientOut = p.ops.traffic.In.Load(), p.ops.traffic.Out.Load()
	for f := commands.Family(0); f < commands.NumFamilies; f++ {
		n.Commands = append(n.Commands, telemetry.Count{Label: commands.FamilyNames[f], N: p.ops.commands[f].Load()})
	}
	for f := commands.Family(0); f < commands.NumFamilies; f++ {
		n.RoundTrips = append(n.RoundTrips, telemetry.Dist{Label: commands.FamilyNames[f], Snapshot: p.ops.roundTrip.Snapshot(int(f))})
	}
	n.PerCommand, n.CommandLabels = p.ops.perCmd, commands.LabelNames[:]
	n.SlowCommands = p.ops.slow.Total()
	if c := p.ops.certs.Load(); c != nil {
		n.Certificates = *c
	}
	n.LockRules = int64(p.decider.Load().Rules.Len())
	n.Locks = &p.ops.locks
	n.AdminAuthFailures, n.AdminAuthLimited = p.ops.admin.AuthFailures.Load(), p.ops.admin.AuthLimited.Load()
	run := p.ops.admin.Running
	n.Reloads, n.ReloadFailures = run.Reloads.Load(), run.Failures.Load()
	n.ReloadRan, n.ReloadError = run.LastReload()
	n.LogWarnings, n.LogErrors = p.ops.logs.Warn.Load(), p.ops.logs.Error.Load()
	n.AuditDropped = p.ops.writer.Dropped()
	n.Epoch, n.GrantsLost = p.locks.CurrentEpoch(), p.locks.Lost.Load()
	n.GrantsUndone, n.DurableShort = p.locks.Undone.Load(), p.locks.Short.Load()
	if cl := p.cl; cl != nil {
		primaries, slots := cl.Size()
		st := &cl.Stats
		n.Cluster = &telemetry.ClusterNumbers{Primaries: primaries, SlotsServed: slots,
			MapChanges: st.Refreshes.Load(), MapUnconfirmed: st.Disagreements.Load(),
			Moved: st.Moved.Load(), Asked: st.Asked.Load(), TryAgain: st.TryAgain.Load(),
			Splits: st.Splits.Load(), ShardFollows: st.ShardFollows.Load()}
	}
	return n
}

// infoSection is the # Lockproxy section: the STATS counters as name:value
// lines.
func (p *Proxy) infoSection() []byte { return telemetry.InfoSection(p.statLines()) }

// statLines are the lines of LOCKPROXY STATS and INFO lockproxy: package
// telemetry's counter table read from the proxy's numbers (numbers.go).
func (p *Proxy) statLines() []telemetry.Line { return telemetry.StatLines(p.numbers(false)) }

// seedRules gives every rule in force its counters, so that its series and
// lines exist from the start, at 0.
func (p *Proxy) seedRules() {
	rules := p.decider.Load().Rules.All()
	for i := range rules {
		p.ops.locks.Rule(ruleLabel(&rules[i]))
	}
}

// upstreamConns counts the live shared upstream connections.
func (p *Proxy) upstreamConns() int64 { return int64(p.pools.Live()) }

func (p *Proxy) version() string {
	if p.opts.Version != "" {
		return p.opts.Version
	}
	return "dev"
}
