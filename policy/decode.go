package policy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// The decoder walks the yaml.Node tree by hand instead of using
// yaml.Unmarshal into structs: that way every message carries the line of the
// offending node, unknown and repeated keys are caught, and decoding goes on
// after a problem so that one run reports all of them.

// pos is where a value sits in the file.
type pos struct{ line, col int }

type decoder struct {
	file string
	root *yaml.Node
	errs []*ConfigError
	// positions maps a config path ("upstream.tls.cert_file", "locks[0]") to
	// its node, so that validation, which runs after decoding, can point at
	// the line a cross-field problem comes from.
	positions map[string]pos
	// reported holds paths that already have an error, so validation does
	// not add a second message about the value decoding refused.
	reported map[string]bool
}

func newDecoder(file string) *decoder {
	return &decoder{file: file, positions: map[string]pos{}, reported: map[string]bool{}}
}

// field decodes the value of one known key.
type field struct {
	name   string
	decode func(n *yaml.Node, path string)
}

func (d *decoder) errAt(n *yaml.Node, flow bool, path, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if path != "" {
		msg = path + ": " + msg
		d.reported[path] = true
	}
	e := &ConfigError{File: d.file, Line: n.Line}
	if flow {
		e.Col = n.Column
	}
	e.Msg = msg
	d.errs = append(d.errs, e)
}

// yamlLine pulls the line out of yaml.v3's "yaml: line N: msg" errors.
var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

func (d *decoder) decodeFile(data []byte, c *Config) {
	if line, msg := scanText(data); msg != "" {
		d.errs = append(d.errs, &ConfigError{File: d.file, Line: line, Msg: msg})
		return
	}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := safeDecode(dec, &doc); err != nil {
		if errors.Is(err, io.EOF) {
			return // an empty file: every default
		}
		d.yamlError(err, data)
		return
	}
	var extra yaml.Node
	if err := safeDecode(dec, &extra); err == nil {
		d.errs = append(d.errs, &ConfigError{File: d.file, Line: extra.Line,
			Msg: "a second YAML document (after ---); the configuration is one document"})
		return
	} else if !errors.Is(err, io.EOF) {
		d.yamlError(err, data)
		return
	}
	if len(doc.Content) == 0 {
		return // only comments
	}
	root := resolve(doc.Content[0])
	d.root = root
	d.positions[""] = pos{root.Line, 0}
	if isNull(root) {
		return
	}
	if root.Kind != yaml.MappingNode {
		d.errAt(root, false, "", "the top level must be a mapping of settings (key: value), not %s", describe(root))
		return
	}
	d.config(root, c)
}

// safeDecode shields Parse from a panic inside the YAML library on hostile
// input: a configuration check must report, never crash.
func safeDecode(dec *yaml.Decoder, n *yaml.Node) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("yaml: cannot parse: %v", r)
		}
	}()
	return dec.Decode(n)
}

// unknownAnchor is the one composition error yaml.v3 reports without a line.
var unknownAnchor = regexp.MustCompile(`^yaml: unknown anchor '(.*)' referenced$`)

func (d *decoder) yamlError(err error, data []byte) {
	msg := err.Error()
	e := &ConfigError{File: d.file, Line: 1}
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		e.Line, _ = strconv.Atoi(m[1])
		msg = m[2]
	} else {
		// yaml.v3 omits the line when it is the first one (its marks are
		// 0-based and 0 means "unknown" to it), so line 1 is right for a
		// syntax error; an unknown alias is found by looking for it.
		if m := unknownAnchor.FindStringSubmatch(msg); m != nil {
			if i := bytes.Index(data, []byte("*"+m[1])); i >= 0 {
				e.Line = 1 + bytes.Count(data[:i], []byte("\n"))
			}
		}
		msg = strings.TrimPrefix(msg, "yaml: ")
	}
	e.Msg = "invalid YAML: " + msg
	d.errs = append(d.errs, e)
	d.errs = append(d.errs, unquotedGlobs(d.file, data)...)
}

// unquotedGlob finds a pattern or template written without quotes whose
// first character is YAML syntax: `pattern: *:lock` is an alias to YAML, and
// `counter: {base}:fence` a mapping. It is the likeliest cause of a syntax
// error in this file, and YAML's own message (often placed on another line)
// does not say so.
var unquotedGlob = regexp.MustCompile(`^\s*(?:-\s+)?(pattern|counter):\s+([*\[{][^#]*?)\s*(?:#.*)?$`)

func unquotedGlobs(file string, data []byte) []*ConfigError {
	var errs []*ConfigError
	for i, line := range strings.Split(string(data), "\n") {
		m := unquotedGlob.FindStringSubmatch(strings.TrimSuffix(line, "\r"))
		if m == nil {
			continue
		}
		what := map[byte]string{'*': "an alias", '[': "the start of a list", '{': "the start of a mapping"}[m[2][0]]
		errs = append(errs, &ConfigError{File: file, Line: i + 1,
			Msg: fmt.Sprintf("%s: %s must be quoted: YAML reads a leading %q as %s; write %s: %s",
				m[1], m[2], m[2][:1], what, m[1], strconv.Quote(m[2]))})
	}
	return errs
}

// scanText finds bytes YAML forbids before the YAML library sees them, since
// the library reports those without a line number.
func scanText(data []byte) (line int, msg string) {
	line = 1
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			return line, fmt.Sprintf("byte 0x%02x is not valid UTF-8; the file must be UTF-8 text", data[i])
		case r == '\n':
			line++
		case r == '\t' || r == '\r' || r == 0xFEFF:
		case r < 0x20 || r == 0x7f:
			return line, fmt.Sprintf("control character 0x%02x; YAML allows only printable text", r)
		}
		i += size
	}
	return 0, ""
}

// resolve follows aliases (*name) to the anchored node. The depth bound
// stops alias cycles, which the YAML parser should never produce anyway.
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n.Kind == yaml.AliasNode && n.Alias != nil && i < 100; i++ {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return "the value " + strconv.Quote(n.Value)
	}
	return "this"
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// at returns where path sits in the file, falling back to its nearest
// enclosing section for a value that was omitted.
func (d *decoder) at(path string) pos {
	for {
		if p, ok := d.positions[path]; ok {
			return p
		}
		if path == "" {
			return pos{}
		}
		if i := strings.LastIndexAny(path, ".["); i >= 0 {
			path = path[:i]
		} else {
			path = ""
		}
	}
}

// mapping decodes the keys of a mapping node, reporting unknown and repeated
// keys. A null value counts as omitted, so `log:` with nothing after it
// leaves the defaults.
func (d *decoder) mapping(n *yaml.Node, path string, fields []field) {
	n = resolve(n)
	if isNull(n) {
		return
	}
	if n.Kind != yaml.MappingNode {
		d.err(n, path, "expected a mapping (key: value lines), got %s", describe(n))
		return
	}
	flow := n.Style&yaml.FlowStyle != 0
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], resolve(n.Content[i+1])
		if k.Kind != yaml.ScalarNode {
			d.errAt(k, flow, path, "a key must be a plain word, got %s", describe(k))
			continue
		}
		name := k.Value
		p := join(path, name)
		if name == "<<" {
			d.errAt(k, flow, path, "merge keys (<<) are not supported; write the settings out")
			continue
		}
		if line, dup := seen[name]; dup {
			d.errAt(k, flow, p, "repeated; it is already set on line %d", line)
			continue
		}
		seen[name] = k.Line
		var f *field
		for j := range fields {
			if fields[j].name == name {
				f = &fields[j]
				break
			}
		}
		if f == nil {
			d.errAt(k, flow, p, "unknown key%s", suggest(name, fields))
			continue
		}
		// Messages about a value point at its key's line: for a block
		// section that is the line naming it ("fence:"), where an omitted
		// field belongs, rather than the line of its first entry. Inside a
		// flow collection the value's own line and column are exact.
		vp := pos{k.Line, 0}
		if flow {
			vp = pos{v.Line, v.Column}
		}
		d.positions[p] = vp
		if isNull(v) {
			continue
		}
		f.decode(v, p)
	}
}

// suggest names the known key closest to an unknown one, for typos and
// valkey.conf habits (proto-max-bulk-len, max_clients).
func suggest(name string, fields []field) string {
	norm := strings.ReplaceAll(strings.ToLower(name), "-", "_")
	best, bestDist := "", 3
	for _, f := range fields {
		dist := editDistance(norm, f.name)
		if strings.ReplaceAll(norm, "_", "") == strings.ReplaceAll(f.name, "_", "") {
			dist = 0
		}
		if dist < bestDist {
			best, bestDist = f.name, dist
		}
	}
	if best != "" {
		return fmt.Sprintf(" (did you mean %s?)", best)
	}
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = f.name
	}
	return "; known keys here: " + strings.Join(names, ", ")
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// scalar checks that n is a single value; what is expected goes in the
// message.
func (d *decoder) scalar(n *yaml.Node, path, want string) bool {
	if n.Kind != yaml.ScalarNode {
		d.errAt(n, d.col(path), path, "expected %s, got %s", want, describe(n))
		return false
	}
	return true
}

// col reports whether errors about path should carry a column: when the
// value shares its line with others (inside a flow collection).
func (d *decoder) col(path string) bool { return d.positions[path].col > 0 }

func (d *decoder) err(n *yaml.Node, path, format string, args ...any) {
	d.errAt(n, d.col(path), path, format, args...)
}

// str accepts any scalar: `password: 12345` means the string "12345", and
// the raw text keeps leading zeros that a number would lose.
func str[T ~string](d *decoder, dst *T) func(*yaml.Node, string) {
	return func(n *yaml.Node, path string) {
		if d.scalar(n, path, "a string") {
			*dst = T(n.Value)
		}
	}
}

func (d *decoder) integer(dst *int) func(*yaml.Node, string) {
	return func(n *yaml.Node, path string) {
		if !d.scalar(n, path, "a whole number") {
			return
		}
		var v int64
		if n.ShortTag() != "!!int" || n.Decode(&v) != nil || int64(int(v)) != v {
			d.err(n, path, "%s is not a whole number", strconv.Quote(n.Value))
			return
		}
		*dst = int(v)
	}
}

func (d *decoder) boolean(dst *bool) func(*yaml.Node, string) {
	return func(n *yaml.Node, path string) {
		if !d.scalar(n, path, "true or false") {
			return
		}
		if n.ShortTag() != "!!bool" || n.Decode(dst) != nil {
			d.err(n, path, "%s is not true or false", strconv.Quote(n.Value))
		}
	}
}

func (d *decoder) size(dst *Size) func(*yaml.Node, string) {
	return func(n *yaml.Node, path string) {
		if !d.scalar(n, path, "a size such as 512mb") {
			return
		}
		s, err := ParseSize(n.Value)
		if err != nil {
			d.err(n, path, "%v", err)
			return
		}
		*dst = s
	}
}

func (d *decoder) duration(dst *time.Duration) func(*yaml.Node, string) {
	return func(n *yaml.Node, path string) {
		if !d.scalar(n, path, "a duration such as 10s") {
			return
		}
		v, err := parseDuration(n.Value)
		if err != nil {
			d.err(n, path, "%v", err)
			return
		}
		*dst = v
	}
}

func (d *decoder) config(n *yaml.Node, c *Config) {
	d.mapping(n, "", []field{
		{"listen", str(d, &c.Listen)},
		{"maxclients", d.integer(&c.MaxClients)},
		{"proto_max_bulk_len", d.size(&c.ProtoMaxBulkLen)},
		{"client_query_buffer_limit", d.size(&c.ClientQueryBufferLimit)},
		{"client_output_buffer_limit", d.size(&c.ClientOutputBufferLimit)},
		{"max_pipeline", d.integer(&c.MaxPipeline)},
		{"event_loops", d.integer(&c.EventLoops)},
		{"busy_poll", d.duration(&c.BusyPoll)},
		{"gomaxprocs", d.integer(&c.GOMAXPROCS)},
		{"shutdown_timeout", d.duration(&c.ShutdownTimeout)},
		{"client_idle_timeout", d.duration(&c.ClientIdleTimeout)},
		{"log", func(n *yaml.Node, path string) {
			d.mapping(n, path, []field{
				{"level", str(d, &c.Log.Level)},
				{"audit_file", str(d, &c.Log.AuditFile)},
				{"audit_max_size", d.size(&c.Log.AuditMaxSize)},
				{"audit_keep", d.integer(&c.Log.AuditKeep)},
				{"format", str(d, &c.Log.Format)},
			})
		}},
		{"upstream", func(n *yaml.Node, path string) { d.upstream(n, path, &c.Upstream) }},
		{"tls", func(n *yaml.Node, path string) {
			d.mapping(n, path, []field{
				{"cert_file", str(d, &c.TLS.CertFile)},
				{"key_file", str(d, &c.TLS.KeyFile)},
				{"client_ca_file", str(d, &c.TLS.ClientCAFile)},
			})
		}},
		{"admin", func(n *yaml.Node, path string) {
			d.mapping(n, path, []field{
				{"password", str(d, &c.Admin.Password)},
				{"open_read", d.boolean(&c.Admin.OpenRead)},
				{"users", func(n *yaml.Node, path string) { d.adminUsers(n, path, &c.Admin.Users) }},
			})
		}},
		{"metrics", func(n *yaml.Node, path string) {
			d.mapping(n, path, []field{{"listen", str(d, &c.Metrics.Listen)}})
		}},
		{"on_flush", str(d, &c.OnFlush)},
		{"locks", func(n *yaml.Node, path string) { d.locks(n, path, c) }},
	})
}

func (d *decoder) upstream(n *yaml.Node, path string, u *UpstreamConfig) {
	d.mapping(n, path, []field{
		{"addr", str(d, &u.Addr)},
		{"username", str(d, &u.Username)},
		{"password", str(d, &u.Password)},
		{"db", d.integer(&u.DB)},
		{"pool_size", d.integer(&u.PoolSize)},
		{"dial_timeout", d.duration(&u.DialTimeout)},
		{"reply_timeout", d.duration(&u.ReplyTimeout)},
		{"reconnect_backoff", d.duration(&u.ReconnectBackoff)},
		{"max_backoff", d.duration(&u.MaxBackoff)},
		{"sentinel", func(n *yaml.Node, path string) {
			st := &u.Sentinel
			d.mapping(n, path, []field{
				{"master", str(d, &st.Master)},
				{"username", str(d, &st.Username)},
				{"password", str(d, &st.Password)},
				{"addrs", d.stringList(&st.Addrs, "host:port addresses")},
			})
		}},
		{"tls", func(n *yaml.Node, path string) {
			t := &u.TLS
			d.mapping(n, path, []field{
				{"enabled", d.boolean(&t.Enabled)},
				{"ca_file", str(d, &t.CAFile)},
				{"cert_file", str(d, &t.CertFile)},
				{"key_file", str(d, &t.KeyFile)},
				{"server_name", str(d, &t.ServerName)},
				{"insecure_skip_verify", d.boolean(&t.InsecureSkipVerify)},
			})
		}},
	})
}

func (d *decoder) locks(n *yaml.Node, path string, c *Config) {
	if n.Kind != yaml.SequenceNode {
		d.err(n, path, "expected a list of lock rules (lines starting with -), got %s", describe(n))
		return
	}
	for i, item := range n.Content {
		item, p := d.element(n, i, item, path)
		var r LockRule
		if item.Kind != yaml.MappingNode {
			// Even null: an empty "-" is a rule without a pattern.
			d.err(item, p, "expected a lock rule (pattern: ..., release: ...), got %s", describe(item))
			c.Locks = append(c.Locks, r)
			continue
		}
		d.mapping(item, p, []field{
			{"pattern", str(d, &r.Pattern)},
			{"release", str(d, &r.Release)},
			{"session", str(d, &r.Session)},
			{"unknown_owner", str(d, &r.UnknownOwner)},
			{"scripts", str(d, &r.Scripts)},
			{"unknown_sha", str(d, &r.UnknownSHA)},
			{"fence", func(n *yaml.Node, path string) {
				r.Fence = &FenceConfig{}
				d.fence(n, path, r.Fence)
			}},
		})
		c.Locks = append(c.Locks, r)
	}
}

// element resolves the i-th element e of the list seq at path and records
// where it is (with its column in a flow list like [a, b]), so errors about
// it name its line; it returns the element and its path.
func (d *decoder) element(seq *yaml.Node, i int, e *yaml.Node, path string) (*yaml.Node, string) {
	e = resolve(e)
	p := fmt.Sprintf("%s[%d]", path, i)
	ep := pos{e.Line, 0}
	if seq.Style&yaml.FlowStyle != 0 {
		ep.col = e.Column
	}
	d.positions[p] = ep
	return e, p
}

// stringList decodes a list of strings into dst, each element's position
// recorded (with its column in a flow list like [a, b]) so errors about it
// name its line.
func (d *decoder) stringList(dst *[]string, what string) func(*yaml.Node, string) {
	return func(n *yaml.Node, path string) {
		if n.Kind != yaml.SequenceNode {
			d.err(n, path, "expected a list of %s, got %s", what, describe(n))
			return
		}
		for i, e := range n.Content {
			e, p := d.element(n, i, e, path)
			var v string
			if !isNull(e) {
				str(d, &v)(e, p)
			}
			*dst = append(*dst, v)
		}
	}
}

func (d *decoder) fence(n *yaml.Node, path string, f *FenceConfig) {
	d.mapping(n, path, []field{
		{"counter", str(d, &f.Counter)},
		{"guards", d.stringList(&f.Guards, "key templates")},
		{"check", str(d, &f.Check)},
		{"unfenced_writes", str(d, &f.UnfencedWrites)},
	})
}

func (d *decoder) adminUsers(n *yaml.Node, path string, users *[]AdminUser) {
	if n.Kind != yaml.SequenceNode {
		d.err(n, path, "expected a list of users (lines starting with -), got %s", describe(n))
		return
	}
	for i, item := range n.Content {
		item, p := d.element(n, i, item, path)
		var u AdminUser
		if item.Kind != yaml.MappingNode {
			d.err(item, p, "expected a user (name: ..., password: ..., role: ...), got %s", describe(item))
			*users = append(*users, u)
			continue
		}
		d.mapping(item, p, []field{
			{"name", str(d, &u.Name)},
			{"password", str(d, &u.Password)},
			{"password_sha256", str(d, &u.PasswordSHA256)},
			{"role", str(d, &u.Role)},
		})
		*users = append(*users, u)
	}
}
