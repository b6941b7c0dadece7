package proxy

import (
	"bytes"
	"strconv"
	"strings"
	"time"

	"github.com/lockproxy/lockproxy/resp"
)

// info answers INFO lockproxy. INFO naming lockproxy among other sections
// gets Valkey's sections with the lockproxy section after them; any other
// INFO goes to Valkey unchanged. It reports false only on a dedicated
// connection, where the usual path forwards the command (inside MULTI too).
func (s *session) info(cmd resp.Command) bool {
	args := cmd.Args
	if s.ded != nil && s.inMulti {
		return false
	}
	mine := false
	rest := [][]byte{args[0]}
	for _, a := range args[1:] {
		if resp.EqualFold(a, "lockproxy") {
			mine = true
		} else {
			rest = append(rest, a)
		}
	}
	if s.p.cl != nil && s.ded == nil && !(mine && len(rest) == 1) && infoWantsKeyspace(rest[1:]) {
		if msg := s.infoDenied(); mine && msg != "" {
			s.local(resp.AppendError(nil, msg))
			return true
		}
		s.clusterInfo(rest, mine) // the Keyspace section summed over the primaries
		return true
	}
	if !mine {
		if s.ded != nil {
			return false
		}
		// handle routes only kForward commands on shared connections.
		s.forward(cmd.Raw, nil)
		return true
	}
	// With admin users set, the section is theirs to read, as STATS is.
	if msg := s.infoDenied(); msg != "" {
		s.local(resp.AppendError(nil, msg))
		return true
	}
	if len(rest) == 1 {
		s.settle()
		s.local(appendInfo(nil, s.p.infoSection(), s.proto))
		return true
	}
	p := s.p
	proto := s.proto
	s.forward(resp.AppendCommand(nil, rest...), func(reply []byte) []byte {
		v, n, err := resp.Parse(reply)
		if err != nil || n != len(reply) || (v.Type != '$' && v.Type != '=') || v.Null {
			return reply // an error, from Valkey: as it is
		}
		text := v.Str
		if v.Type == '=' && len(text) >= 4 {
			text = text[4:]
		}
		text = append(bytes.TrimRight(text, "\r\n"), "\r\n\r\n"...)
		return appendInfo(nil, append(text, p.infoSection()...), proto)
	})
	return true
}

// infoDenied is the error for INFO lockproxy on this connection, or "".
// Under admin.password alone the section stays open, as it always was;
// admin.users make it follow the read role.
func (s *session) infoDenied() string {
	if !s.p.ops.logins.Load().named {
		return ""
	}
	return s.adminDenied("INFO lockproxy", false, false)
}

// appendInfo encodes INFO text as Valkey does: a bulk string in RESP2, a
// verbatim string of format txt in RESP3.
func appendInfo(dst, text []byte, proto int) []byte {
	if proto >= 3 {
		dst = append(dst, '=')
		dst = strconv.AppendInt(dst, int64(len(text)+4), 10)
		dst = append(dst, "\r\ntxt:"...)
		dst = append(dst, text...)
		return append(dst, '\r', '\n')
	}
	return resp.AppendBulk(dst, text)
}

// infoSection is the # Lockproxy section: the STATS counters as name:value
// lines.
func (p *Proxy) infoSection() []byte {
	var b bytes.Buffer
	b.WriteString("# Lockproxy\r\n")
	for _, f := range p.statsFields() {
		b.WriteString(f.k)
		b.WriteByte(':')
		switch v := f.v.(type) {
		case int64:
			b.WriteString(strconv.FormatInt(v, 10))
		case string:
			b.WriteString(strings.NewReplacer("\r", " ", "\n", " ").Replace(v))
		}
		b.WriteString("\r\n")
	}
	return b.Bytes()
}

// statsFields are the counters of LOCKPROXY STATS and INFO lockproxy, in
// the order they are shown. Every value is an int64 or a string.
func (p *Proxy) statsFields() []field {
	o := p.ops
	now := time.Now()
	d := p.decider.Load()
	all := &o.all
	f := []field{
		{"lockproxy_version", p.version()},
		{"uptime_in_seconds", int64(now.Sub(o.started).Seconds())},
		{"connected_clients", p.stats.clients.Load()},
		{"rejected_clients", p.stats.rejected.Load()},
		{"maxclients", int64(p.opts.MaxClients)},
		{"dedicated_sessions", p.stats.dedicated.Load()},
		{"upstream_connections", p.upstreamConns() + p.stats.dedicated.Load()},
		{"upstream_dials", o.dials.Load()},
		{"upstream_dial_failures", o.dialErrors.Load()},
		{"client_input_bytes", o.bytesIn.Load()},
		{"client_output_bytes", o.bytesOut.Load()},
		{"lock_rules", int64(d.Rules.Len())},
		{"grants", all.grants.Load()},
		{"contention", all.contention.Load()},
		{"rewritten", all.released.Load() + all.renewed.Load()},
		{"token_checked_releases", all.released.Load()},
		{"token_checked_renewals", all.renewed.Load()},
		{"refused", all.outcome(OutcomeRefused)},
	}
	for _, kc := range all.refusalCounts() {
		f = append(f, field{"refused_" + strings.ToLower(kc.kind), kc.n})
	}
	f = append(f,
		// A successor deletion is an observed command too.
		field{"observed", all.outcome(OutcomeObserved) + all.outcome(OutcomeSuccessorDeleted)},
		field{"successor_deletions_prevented", all.prevented.Load()},
		field{"successor_deletions", all.outcome(OutcomeSuccessorDeleted)},
		field{"lapsed_leases", p.lapsedTotal()},
		field{"late_releases", all.lapsed.Load()},
		field{"stale_fenced_writes_refused", all.outcome(OutcomeStaleRefused)},
	)
	f = append(f, histFields("hold_time", all.hold.snapshot())...)
	f = append(f, histFields("wait_time", all.wait.snapshot())...)
	last := "none"
	if r := o.lastReload.Load(); r != nil {
		last = "ok"
		if r.err != "" {
			last = "error: " + r.err
		}
	}
	f = append(f,
		field{"admin_auth_failures", o.authFailures.Load()},
		field{"admin_auth_rate_limited", o.authLimited.Load()},
		field{"config_reloads", o.reloads.Load()},
		field{"config_reload_failures", o.reloadErrors.Load()},
		field{"last_reload", last},
		field{"log_warnings", o.logWarn.Load()},
		field{"log_errors", o.logError.Load()},
		field{"audit_events_dropped", o.writer.dropped.Load()},
	)
	return append(f, p.clusterFields()...)
}

func histFields(name string, h histSnapshot) []field {
	msf := func(sec float64) string { return strconv.FormatFloat(sec*1000, 'f', 3, 64) }
	return []field{
		{name + "_count", int64(h.count)},
		{name + "_mean_ms", msf(h.mean())},
		{name + "_p50_ms", msf(h.quantile(0.5))},
		{name + "_p99_ms", msf(h.quantile(0.99))},
		{name + "_max_ms", msf(h.max)},
	}
}

func (p *Proxy) version() string {
	if p.opts.Version != "" {
		return p.opts.Version
	}
	return "dev"
}
