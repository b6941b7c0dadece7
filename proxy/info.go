package proxy

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/lockproxy/lockproxy/resp"
	"github.com/lockproxy/lockproxy/telemetry"
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
		if !s.settle() {
			return true
		}
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

// statsFields are the lines of LOCKPROXY STATS and INFO lockproxy:
// counterTable's rows in order, each sample added to its line (info.go's
// rows say which). Every value is an int64 or a string.
func (p *Proxy) statsFields() []field {
	p.seedRules()
	var f []field
	at := map[string]int{} // line name → index in f
	add := func(name string, v int64) {
		if name == "" {
			return
		}
		if i, ok := at[name]; ok {
			f[i].v = f[i].v.(int64) + v
			return
		}
		at[name] = len(f)
		f = append(f, field{name, v})
	}
	for i := range counterTable {
		r := &counterTable[i]
		l := r.info
		if l == nil || (l.cluster && p.cl == nil) {
			continue
		}
		switch {
		case r.text != nil:
			f = append(f, field{l.names[0], r.text(p)})
		case r.kind == histogramRow:
			var total telemetry.Snapshot
			r.hist(p, func(h telemetry.Snapshot, _ ...string) { total = total.Merge(h) })
			f = append(f, histFields(l.names[0], total)...)
		default:
			for _, n := range l.names {
				add(n, 0)
			}
			r.read(p, func(v int64, labels ...string) {
				if l.line == nil {
					add(l.names[0], v)
				} else {
					add(l.line(labels), v)
				}
			})
		}
	}
	return f
}

func histFields(name string, h telemetry.Snapshot) []field {
	msf := func(sec float64) string { return strconv.FormatFloat(sec*1000, 'f', 3, 64) }
	return []field{
		{name + "_count", int64(h.Count)},
		{name + "_mean_ms", msf(h.Mean())},
		{name + "_p50_ms", msf(h.Quantile(0.5))},
		{name + "_p99_ms", msf(h.Quantile(0.99))},
		{name + "_max_ms", msf(h.Max)},
	}
}

func (p *Proxy) version() string {
	if p.opts.Version != "" {
		return p.opts.Version
	}
	return "dev"
}
