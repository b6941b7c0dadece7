package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// Decoding is yaml.v3's own, into the Config struct: Decoder.KnownFields
// reports unknown keys, repeated keys are refused, and every type error of
// the document comes back at once, each with its line; Size and Duration
// parse themselves (units.go). What yaml.v3 does not give is which setting a
// line holds, in the file's terms ("upstream.tls.cert_file"), nor a column
// inside a flow collection, nor words a reader of this file knows ("not a
// whole number" rather than Go's type names). A thin pass over the node tree
// (index) records where each setting sits: yaml.v3's messages are reworded
// with it, and validation, which needs whole values, places its
// cross-field messages with it.

// pos is where a value sits in the file.
type pos struct{ line, col int }

// placed is a node of the file and the setting path it holds.
type placed struct {
	n    *yaml.Node
	path string
	flow bool // inside a flow collection: messages carry a column
}

type decoder struct {
	file string
	root *yaml.Node
	errs []*ConfigError
	// positions maps a config path ("upstream.tls.cert_file", "locks[0]") to
	// where it is written, so that validation, which runs after decoding,
	// can point at the line a cross-field problem comes from.
	positions map[string]pos
	// keys and values are every mapping key and every value (list elements
	// included) by line, for placing yaml.v3's messages.
	keys, values map[int][]placed
	// reported holds paths that already have an error, so validation does
	// not add a second message about the value decoding refused.
	reported map[string]bool
}

func newDecoder(file string) *decoder {
	return &decoder{file: file, positions: map[string]pos{}, reported: map[string]bool{},
		keys: map[int][]placed{}, values: map[int][]placed{}}
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
	d.index(root, "", false)

	strict := yaml.NewDecoder(bytes.NewReader(data))
	strict.KnownFields(true)
	var te *yaml.TypeError
	if err := safeDecode(strict, c); errors.As(err, &te) {
		for _, msg := range te.Errors {
			d.translate(msg)
		}
	} else if err != nil {
		d.errs = append(d.errs, &ConfigError{File: d.file, Line: 1, Msg: strings.TrimPrefix(err.Error(), "yaml: ")})
	}
}

// index records where every setting is written. Aliases are not followed
// into: their settings are where the anchor is.
func (d *decoder) index(n *yaml.Node, path string, flow bool) {
	switch n.Kind {
	case yaml.MappingNode:
		flow = flow || n.Style&yaml.FlowStyle != 0
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind == yaml.ScalarNode && k.Value == "<<" {
				d.errAt(k, flow, path, "merge keys (<<) are not supported; write the settings out")
				continue
			}
			p := join(path, k.Value)
			d.keys[k.Line] = append(d.keys[k.Line], placed{k, p, flow})
			// Messages about a value point at its key's line: for a block
			// section that is the line naming it ("fence:"), where an
			// omitted field belongs, rather than the line of its first
			// entry. Inside a flow collection the value's own line and
			// column are exact.
			if _, seen := d.positions[p]; !seen {
				vp := pos{k.Line, 0}
				if flow {
					rv := resolve(v)
					vp = pos{rv.Line, rv.Column}
				}
				d.positions[p] = vp
			}
			d.placeValue(v, p, flow)
		}
	case yaml.SequenceNode:
		flow = flow || n.Style&yaml.FlowStyle != 0
		for i, e := range n.Content {
			p := fmt.Sprintf("%s[%d]", path, i)
			re := resolve(e)
			ep := pos{re.Line, 0}
			if flow {
				ep.col = re.Column
			}
			d.positions[p] = ep
			if isNull(re) {
				// yaml.v3 leaves an empty element out of the list: the
				// rule or address meant there would vanish unsaid.
				d.errAt(re, flow, p, "expected %s, got %s", element(p), describe(re))
				continue
			}
			d.placeValue(e, p, flow)
		}
	}
}

func (d *decoder) placeValue(v *yaml.Node, path string, flow bool) {
	rv := resolve(v)
	d.values[rv.Line] = append(d.values[rv.Line], placed{rv, path, flow})
	if rv.ShortTag() == "!!float" {
		if t := settingType(path); t != nil && t.Kind() == reflect.Int {
			// yaml.v3 would drop the fraction without a word.
			d.errAt(rv, flow, path, "%s is not a whole number", strconv.Quote(rv.Value))
		}
	}
	if v.Kind != yaml.AliasNode {
		d.index(v, path, flow)
	}
}

// yaml.v3's messages, and those of the Unmarshalers in units.go.
var (
	reUnknown  = regexp.MustCompile(`^line (\d+): field (.*) not found in type (\S+)$`)
	reRepeated = regexp.MustCompile(`^line (\d+): (?:mapping key "(.*)" already defined|field (.*) already set in type \S+)`)
	reType     = regexp.MustCompile("^line (\\d+): cannot unmarshal (\\S+)(?: `(.*)`)? into (\\S+)$")
	reOwn      = regexp.MustCompile(`^line (\d+):(\d+): (.*)$`)
	reLine     = regexp.MustCompile(`^line (\d+): (.*)$`)
)

// translate turns one of yaml.v3's decoding messages into a ConfigError
// naming the setting, in this file's words.
func (d *decoder) translate(msg string) {
	atoi := func(s string) int { n, _ := strconv.Atoi(s); return n }
	if m := reOwn.FindStringSubmatch(msg); m != nil {
		line, col := atoi(m[1]), atoi(m[2])
		if p := d.find(d.values[line], func(p placed) bool { return p.n.Column == col }); p != nil {
			d.errAt(p.n, p.flow, p.path, "%s", m[3])
			return
		}
		d.errs = append(d.errs, &ConfigError{File: d.file, Line: line, Msg: m[3]})
		return
	}
	if m := reUnknown.FindStringSubmatch(msg); m != nil {
		name := m[2]
		if p := d.find(d.keys[atoi(m[1])], func(p placed) bool { return p.n.Value == name }); p != nil {
			d.errAt(p.n, p.flow, p.path, "unknown key%s", suggest(name, yamlKeys(m[3])))
			return
		}
	}
	if m := reRepeated.FindStringSubmatch(msg); m != nil {
		name := m[2] + m[3]
		var first int
		for line := 1; line < atoi(m[1]) && first == 0; line++ {
			for _, k := range d.keys[line] {
				if k.n.Value == name {
					first = line
				}
			}
		}
		if p := d.find(d.keys[atoi(m[1])], func(p placed) bool { return p.n.Value == name }); p != nil {
			d.errAt(p.n, p.flow, p.path, "repeated; it is already set on line %d", first)
			return
		}
	}
	if m := reType.FindStringSubmatch(msg); m != nil {
		tag, text, into := m[2], strings.TrimSuffix(m[3], "..."), m[4]
		cands := d.values[atoi(m[1])]
		if tag == "!!seq" || tag == "!!map" {
			// A block section starts on the line of its first key, where
			// the value that failed may sit too: the innermost one is meant.
			cands = slices.Clone(cands)
			slices.Reverse(cands)
		}
		p := d.find(cands, func(p placed) bool {
			if tag == "!!seq" || tag == "!!map" {
				return p.n.ShortTag() == tag
			}
			return p.n.Kind == yaml.ScalarNode && strings.HasPrefix(p.n.Value, text)
		})
		if p != nil {
			d.errAt(p.n, p.flow, p.path, "%s", expected(p, into))
			return
		}
	}
	e := &ConfigError{File: d.file, Line: 1, Msg: msg}
	if m := reLine.FindStringSubmatch(msg); m != nil {
		e.Line, e.Msg = atoi(m[1]), m[2]
	}
	d.errs = append(d.errs, e)
}

// find returns the first candidate that matches and has no message yet.
func (d *decoder) find(cands []placed, match func(placed) bool) *placed {
	for i := range cands {
		if match(cands[i]) && !d.reported[cands[i].path] {
			return &cands[i]
		}
	}
	return nil
}

// lists names what each list of the file holds, for messages.
var lists = map[string]string{
	"locks":  "lock rules (lines starting with -)",
	"users":  "users (lines starting with -)",
	"addrs":  "host:port addresses",
	"guards": "key templates",
}

// elements names what one element of each list is.
var elements = map[string]string{
	"locks":  "a lock rule (pattern: ..., release: ...)",
	"users":  "a user (name: ..., password: ..., role: ...)",
	"addrs":  "a host:port address",
	"guards": "a key template",
}

// element says what the list element at path should be.
func element(path string) string {
	if what, ok := elements[listName(path)]; ok {
		return what
	}
	return "a value"
}

// listName is the key of the list an element path belongs to:
// "locks" for "locks[2]", "addrs" for "upstream.sentinel.addrs[0]".
func listName(elem string) string {
	list := elem[:strings.LastIndexByte(elem, '[')]
	return list[strings.LastIndexAny(list, ".")+1:]
}

// expected says what the setting at p should have been, given the Go type
// yaml.v3 could not decode it into.
func expected(p *placed, into string) string {
	got := describe(p.n)
	name := p.path[strings.LastIndexAny(p.path, ".")+1:]
	t := configTypes()[strings.TrimPrefix(into, "*")]
	switch {
	case into == "int":
		return fmt.Sprintf("%s is not a whole number", strconv.Quote(p.n.Value))
	case into == "bool":
		return fmt.Sprintf("%s is not true or false", strconv.Quote(p.n.Value))
	case into == "string" || t != nil && t.Kind() == reflect.String:
		return "expected a string, got " + got
	case strings.HasPrefix(into, "[]"):
		what := lists[name]
		if what == "" {
			what = "values"
		}
		return fmt.Sprintf("expected a list of %s, got %s", what, got)
	case t != nil && t.Kind() == reflect.Struct && strings.HasSuffix(p.path, "]"):
		return fmt.Sprintf("expected %s, got %s", element(p.path), got)
	case t != nil && t.Kind() == reflect.Struct:
		return "expected a mapping (key: value lines), got " + got
	}
	return fmt.Sprintf("expected %s, got %s", into, got)
}

// configTypes maps the Go name of every type in Config ("config.LogConfig")
// to the type, as yaml.v3's messages name them.
var configTypes = sync.OnceValue(func() map[string]reflect.Type {
	types := map[string]reflect.Type{}
	var walk func(reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
			t = t.Elem()
		}
		if _, seen := types[t.String()]; seen {
			return
		}
		types[t.String()] = t
		if t.Kind() == reflect.Struct {
			for f := range t.Fields() {
				walk(f.Type)
			}
		}
	}
	walk(reflect.TypeFor[Config]())
	return types
})

// settingType is the Go type of the setting at path ("upstream.db",
// "locks[0].fence.guards"), or nil when there is none.
func settingType(path string) reflect.Type {
	t := reflect.TypeFor[Config]()
	for _, part := range strings.FieldsFunc(path, func(r rune) bool { return r == '.' || r == '[' }) {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if strings.HasSuffix(part, "]") {
			if t.Kind() != reflect.Slice {
				return nil
			}
			t = t.Elem()
			continue
		}
		if t.Kind() != reflect.Struct {
			return nil
		}
		var next reflect.Type
		for f := range t.Fields() {
			if name, _, _ := strings.Cut(f.Tag.Get("yaml"), ","); name == part {
				next = f.Type
			}
		}
		if next == nil {
			return nil
		}
		t = next
	}
	return t
}

// yamlKeys lists the YAML keys of the Config type named typ, in order.
func yamlKeys(typ string) []string {
	t := configTypes()[typ]
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	var names []string
	for f := range t.Fields() {
		if name, _, _ := strings.Cut(f.Tag.Get("yaml"), ","); name != "" && name != "-" {
			names = append(names, name)
		}
	}
	return names
}

// safeDecode shields Parse from a panic inside the YAML library on hostile
// input: a configuration check must report, never crash.
func safeDecode(dec *yaml.Decoder, v any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("yaml: cannot parse: %v", r)
		}
	}()
	return dec.Decode(v)
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

// suggest names the known key closest to an unknown one, for typos and
// valkey.conf habits (proto-max-bulk-len, max_clients).
func suggest(name string, known []string) string {
	norm := strings.ReplaceAll(strings.ToLower(name), "-", "_")
	best, bestDist := "", 3
	for _, k := range known {
		dist := editDistance(norm, k)
		if strings.ReplaceAll(norm, "_", "") == strings.ReplaceAll(k, "_", "") {
			dist = 0
		}
		if dist < bestDist {
			best, bestDist = k, dist
		}
	}
	if best != "" {
		return fmt.Sprintf(" (did you mean %s?)", best)
	}
	return "; known keys here: " + strings.Join(known, ", ")
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
