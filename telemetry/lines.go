package telemetry

import (
	"bytes"
	"strconv"
	"strings"
)

// Line is one line of LOCKPROXY STATS and INFO lockproxy. Value is an int64
// or a string.
type Line struct {
	Name  string
	Value any
}

// Lines are the table's INFO / STATS lines read from src: the rows in order,
// each sample added to its line. cluster says whether the rows shown only in
// front of a cluster are shown.
func (t *Table[S]) Lines(src S, cluster bool) []Line {
	var f []Line
	at := map[string]int{} // line name → index in f
	add := func(name string, v int64) {
		if name == "" {
			return
		}
		if i, ok := at[name]; ok {
			f[i].Value = f[i].Value.(int64) + v
			return
		}
		at[name] = len(f)
		f = append(f, Line{name, v})
	}
	for i := range t.rows {
		r := &t.rows[i]
		l := r.Info
		if l == nil || (l.cluster && !cluster) {
			continue
		}
		switch {
		case r.Text != nil:
			f = append(f, Line{l.names[0], r.Text(src)})
		case r.Kind == KindHistogram:
			var total Snapshot
			r.Hist(src, func(h Snapshot, _ ...string) { total = total.Merge(h) })
			f = append(f, histLines(l.names[0], total)...)
		default:
			for _, n := range l.names {
				add(n, 0)
			}
			r.Read(src, func(v int64, labels ...string) {
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

// histLines summarise a histogram in milliseconds: count, mean, p50, p99
// and max.
func histLines(name string, h Snapshot) []Line {
	msf := func(sec float64) string { return strconv.FormatFloat(sec*1000, 'f', 3, 64) }
	return []Line{
		{name + "_count", int64(h.Count)},
		{name + "_mean_ms", msf(h.Mean())},
		{name + "_p50_ms", msf(h.Quantile(0.5))},
		{name + "_p99_ms", msf(h.Quantile(0.99))},
		{name + "_max_ms", msf(h.Max)},
	}
}

// InfoSection is the # Lockproxy section of INFO: the lines as name:value,
// each ended by CRLF; a line break inside a text value becomes a space.
func InfoSection(lines []Line) []byte {
	var b bytes.Buffer
	b.WriteString("# Lockproxy\r\n")
	for _, f := range lines {
		b.WriteString(f.Name)
		b.WriteByte(':')
		switch v := f.Value.(type) {
		case int64:
			b.WriteString(strconv.FormatInt(v, 10))
		case string:
			b.WriteString(strings.NewReplacer("\r", " ", "\n", " ").Replace(v))
		}
		b.WriteString("\r\n")
	}
	return b.Bytes()
}
