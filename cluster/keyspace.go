package cluster

import (
	"bytes"
	"strconv"

	"github.com/lockproxy/lockproxy/resp"
)

// In front of a cluster, INFO's Keyspace section counts the whole
// keyspace, as the one server a client of the proxy believes it talks to
// would: the same INFO goes to every primary, the other sections are one
// node's (the one the session's keyless commands go to), and each db line
// is summed over the primaries — keys and expires (and any other count
// Valkey adds) added, avg_ttl the mean of the primaries' avg_ttl weighted by
// their expires (each primary's figure is an estimate over its keys with a
// TTL).

// WantsKeyspace reports whether INFO with these section arguments
// includes the Keyspace section: no argument (default), default, all,
// everything or keyspace.
func WantsKeyspace(sections [][]byte) bool {
	if len(sections) == 0 {
		return true
	}
	for _, a := range sections {
		for _, s := range []string{"keyspace", "default", "all", "everything"} {
			if resp.EqualFold(a, s) {
				return true
			}
		}
	}
	return false
}

// InfoText is the text of an INFO reply (a bulk string, or a RESP3
// verbatim string without its format); ok is false for anything else (an
// error).
func InfoText(r []byte) (text []byte, ok bool) {
	v, n, err := resp.Parse(r)
	if err != nil || n != len(r) || (v.Type != '$' && v.Type != '=') || v.Null {
		return nil, false
	}
	text = v.Str
	if v.Type == '=' && len(text) >= 4 {
		text = text[4:]
	}
	return text, true
}

// SumKeyspace returns texts[first] with its Keyspace section replaced by
// the sum of every text's. The section keeps Valkey's shape: "# Keyspace",
// then one "dbN:field=value,..." line per non-empty database, in db order.
func SumKeyspace(texts [][]byte, first int) []byte {
	type db struct {
		fields []string
		vals   map[string]int64
		ttlSum float64 // avg_ttl × expires, summed
	}
	dbs := map[int]*db{}
	for _, t := range texts {
		for _, line := range keyspaceLines(t) {
			name, rest, ok := bytes.Cut(line, []byte(":"))
			n, err := strconv.Atoi(string(bytes.TrimPrefix(name, []byte("db"))))
			if !ok || err != nil || !bytes.HasPrefix(name, []byte("db")) {
				continue
			}
			d := dbs[n]
			if d == nil {
				d = &db{vals: map[string]int64{}}
				dbs[n] = d
			}
			var ttl, expires int64
			for _, kv := range bytes.Split(rest, []byte(",")) {
				k, v, _ := bytes.Cut(kv, []byte("="))
				x, _ := strconv.ParseInt(string(v), 10, 64)
				key := string(k)
				if _, seen := d.vals[key]; !seen {
					d.fields = append(d.fields, key)
				}
				switch key {
				case "avg_ttl":
					ttl = x
					d.vals[key] = 0
				case "expires":
					expires = x
					d.vals[key] += x
				default:
					d.vals[key] += x
				}
			}
			d.ttlSum += float64(ttl) * float64(expires)
		}
	}
	var sec bytes.Buffer
	sec.WriteString("# Keyspace\r\n")
	for n := 0; len(dbs) > 0; n++ {
		d := dbs[n]
		if d == nil {
			continue
		}
		delete(dbs, n)
		sec.WriteString("db" + strconv.Itoa(n) + ":")
		for i, f := range d.fields {
			if i > 0 {
				sec.WriteByte(',')
			}
			v := d.vals[f]
			if f == "avg_ttl" && d.vals["expires"] > 0 {
				v = int64(d.ttlSum / float64(d.vals["expires"]))
			}
			sec.WriteString(f + "=" + strconv.FormatInt(v, 10))
		}
		sec.WriteString("\r\n")
	}
	return replaceSection(texts[first], []byte("# Keyspace"), sec.Bytes())
}

// keyspaceLines returns the lines of an INFO text's Keyspace section.
func keyspaceLines(text []byte) [][]byte {
	start, end := sectionBounds(text, []byte("# Keyspace"))
	if start < 0 {
		return nil
	}
	var out [][]byte
	for _, l := range bytes.Split(text[start:end], []byte("\r\n"))[1:] {
		if len(l) > 0 {
			out = append(out, l)
		}
	}
	return out
}

// sectionBounds finds the section whose header line is head: from the
// header to the blank line that ends it (or the end of the text); start is
// -1 when there is none.
func sectionBounds(text, head []byte) (start, end int) {
	start = -1
	for off := 0; off < len(text); {
		l := bytes.IndexByte(text[off:], '\n')
		next := len(text)
		if l >= 0 {
			next = off + l + 1
		}
		line := bytes.TrimRight(text[off:next], "\r\n")
		switch {
		case start < 0 && bytes.EqualFold(line, head):
			start = off
		case start >= 0 && len(line) == 0:
			return start, off
		}
		off = next
	}
	if start < 0 {
		return -1, -1
	}
	return start, len(text)
}

// replaceSection puts sec (header and lines, each ending in CRLF) in the
// place of text's section named head.
func replaceSection(text, head, sec []byte) []byte {
	start, end := sectionBounds(text, head)
	if start < 0 {
		return text
	}
	out := append(append([]byte(nil), text[:start]...), sec...)
	return append(out, text[end:]...)
}

// SumInfo sends the INFO command raw to every primary of m (in protocol
// proto, logged in as login) and returns the text of the one at node (the
// first primary when node is none of them) with its Keyspace section
// summed over all (SumKeyspace). When a primary cannot be asked, or
// answers with anything but INFO's text, ok is false and out is the reply
// the client gets: the host's LostText, or the node's own error as it is.
// It waits for each primary in turn.
func (v *View) SumInfo(m *Map, raw []byte, proto int, login, node string) (out []byte, ok bool) {
	texts := make([][]byte, 0, len(m.Primaries))
	first := 0
	for i, addr := range m.Primaries {
		r, err := v.host.Do(addr, proto, login, raw)
		if err != nil {
			v.RefreshSoon()
			return resp.AppendError(nil, v.host.LostText(addr, err)), false
		}
		text, ok := InfoText(r[0])
		if !ok {
			return r[0], false
		}
		if addr == node {
			first = i
		}
		texts = append(texts, text)
	}
	return SumKeyspace(texts, first), true
}
