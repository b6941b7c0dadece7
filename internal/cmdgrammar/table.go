package cmdgrammar

import (
	"fmt"
	"sort"
	"strings"
)

// Arg is one node of a command's argument tree (COMMAND DOCS "arguments").
type Arg struct {
	Name          string
	Type          string // key, string, integer, double, pattern, unix-time, pure-token, block, oneof
	Token         string // the word that introduces it, "" when none
	Optional      bool
	Multiple      bool
	MultipleToken bool  // with Multiple: the token precedes every repetition
	Args          []Arg // of a block or oneof
}

// Command is one command or subcommand: its words ("SET", or "CLUSTER"
// "ADDSLOTS"), its flags and key-spec flags (COMMAND INFO) and its
// argument tree (COMMAND DOCS).
type Command struct {
	Words    []string
	Arity    int
	Flags    []string
	KeyFlags []string // the union of its key specs' flags: RW, OW, RM, insert, delete ...
	Args     []Arg
}

// Name is the command's words joined by a space, upper case.
func (c *Command) Name() string { return strings.ToUpper(strings.Join(c.Words, " ")) }

// StatName is the command's name in INFO commandstats ("config|set").
func (c *Command) StatName() string { return strings.ToLower(strings.Join(c.Words, "|")) }

func (c *Command) has(list []string, f string) bool {
	for _, x := range list {
		if strings.EqualFold(x, f) {
			return true
		}
	}
	return false
}

// HasFlag reports a COMMAND INFO flag (write, admin, blocking ...).
func (c *Command) HasFlag(f string) bool { return c.has(c.Flags, f) }

// Writes reports whether the command may write a key: the write flag, or a
// key spec that reads-and-writes, overwrites, removes, inserts, deletes or
// updates.
func (c *Command) Writes() bool {
	if c.HasFlag("write") {
		return true
	}
	for _, f := range []string{"RW", "OW", "RM", "insert", "delete", "update"} {
		if c.has(c.KeyFlags, f) {
			return true
		}
	}
	return false
}

// Reconfigures reports whether the command is one that may reconfigure
// Valkey: flagged admin or dangerous, and not readonly.
func (c *Command) Reconfigures() bool {
	return (c.HasFlag("admin") || c.HasFlag("dangerous")) && !c.HasFlag("readonly")
}

// Table is the commands read from a server, each command with
// subcommands replaced by its subcommands.
type Table struct {
	Commands []*Command
}

// Fuzzed is the commands the fuzzer generates: every command that writes
// a key and every command that reconfigures Valkey, in name order.
func (t *Table) Fuzzed() []*Command {
	var out []*Command
	for _, c := range t.Commands {
		if c.Writes() || c.Reconfigures() {
			out = append(out, c)
		}
	}
	return out
}

// Lookup finds a command by its name ("SET", "CLUSTER ADDSLOTS"), any case.
func (t *Table) Lookup(name string) *Command {
	for _, c := range t.Commands {
		if strings.EqualFold(c.Name(), name) {
			return c
		}
	}
	return nil
}

// Parse builds the table from the decoded replies of COMMAND DOCS and
// COMMAND INFO (as a RESP3 client decodes them: maps as map[any]any, or
// RESP2 flat key/value lists; arrays as []any; strings; int64s).
func Parse(docs, info any) (*Table, error) {
	infos := map[string]infoEntry{}
	list, ok := info.([]any)
	if !ok {
		return nil, fmt.Errorf("cmdgrammar: COMMAND INFO is a %T, not an array", info)
	}
	for _, e := range list {
		if err := collectInfo(e, infos); err != nil {
			return nil, err
		}
	}
	dm, err := asMap(docs)
	if err != nil {
		return nil, fmt.Errorf("cmdgrammar: COMMAND DOCS: %v", err)
	}
	t := &Table{}
	for name, d := range dm {
		if err := t.addDoc(name, d, infos); err != nil {
			return nil, err
		}
	}
	sort.Slice(t.Commands, func(i, j int) bool { return t.Commands[i].Name() < t.Commands[j].Name() })
	return t, nil
}

type infoEntry struct {
	arity    int
	flags    []string
	keyFlags []string
}

// collectInfo reads one COMMAND INFO entry and its subcommands into infos,
// keyed by lower-case "name" or "name|sub".
func collectInfo(e any, infos map[string]infoEntry) error {
	a, ok := e.([]any)
	if !ok || len(a) < 3 {
		if e == nil {
			return nil
		}
		return fmt.Errorf("cmdgrammar: COMMAND INFO entry %v", e)
	}
	name := strings.ToLower(str(a[0]))
	ie := infoEntry{arity: int(num(a[1])), flags: strs(a[2])}
	if len(a) > 8 {
		specs, _ := a[8].([]any)
		for _, s := range specs {
			m, err := asMap(s)
			if err != nil {
				continue
			}
			ie.keyFlags = append(ie.keyFlags, strs(m["flags"])...)
		}
	}
	infos[name] = ie
	if len(a) > 9 {
		subs, _ := a[9].([]any)
		for _, s := range subs {
			if err := collectInfo(s, infos); err != nil {
				return err
			}
		}
	}
	return nil
}

func (t *Table) addDoc(name string, d any, infos map[string]infoEntry) error {
	m, err := asMap(d)
	if err != nil {
		return fmt.Errorf("cmdgrammar: docs of %s: %v", name, err)
	}
	if subs, ok := m["subcommands"]; ok && subs != nil {
		sm, err := asMap(subs)
		if err != nil {
			return fmt.Errorf("cmdgrammar: subcommands of %s: %v", name, err)
		}
		for sub, sd := range sm {
			if err := t.addDoc(sub, sd, infos); err != nil {
				return err
			}
		}
		return nil
	}
	ie, ok := infos[strings.ToLower(name)]
	if !ok {
		return nil // documented but not a command of this server (a module's)
	}
	args, err := parseArgs(m["arguments"])
	if err != nil {
		return fmt.Errorf("cmdgrammar: arguments of %s: %v", name, err)
	}
	t.Commands = append(t.Commands, &Command{
		Words: strings.Split(strings.ToUpper(name), "|"), Arity: ie.arity,
		Flags: ie.flags, KeyFlags: ie.keyFlags, Args: args,
	})
	return nil
}

func parseArgs(v any) ([]Arg, error) {
	if v == nil {
		return nil, nil
	}
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("arguments are a %T", v)
	}
	out := make([]Arg, 0, len(list))
	for _, e := range list {
		m, err := asMap(e)
		if err != nil {
			return nil, err
		}
		a := Arg{Name: str(m["name"]), Type: str(m["type"]), Token: str(m["token"])}
		for _, f := range strs(m["flags"]) {
			switch f {
			case "optional":
				a.Optional = true
			case "multiple":
				a.Multiple = true
			case "multiple_token":
				a.MultipleToken = true
			}
		}
		if a.Args, err = parseArgs(m["arguments"]); err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

// asMap accepts a RESP3 map or a RESP2 flat list of key/value pairs.
func asMap(v any) (map[string]any, error) {
	switch x := v.(type) {
	case map[any]any:
		m := make(map[string]any, len(x))
		for k, v := range x {
			m[str(k)] = v
		}
		return m, nil
	case map[string]any:
		return x, nil
	case []any:
		if len(x)%2 != 0 {
			return nil, fmt.Errorf("a list of %d, not of pairs", len(x))
		}
		m := make(map[string]any, len(x)/2)
		for i := 0; i < len(x); i += 2 {
			m[str(x[i])] = x[i+1]
		}
		return m, nil
	}
	return nil, fmt.Errorf("a %T, not a map", v)
}

func str(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []byte:
		return string(x)
	case nil:
		return ""
	}
	return fmt.Sprint(v)
}

func num(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case int:
		return int64(x)
	}
	return 0
}

func strs(v any) []string {
	switch x := v.(type) {
	case []any:
		out := make([]string, 0, len(x))
		for _, e := range x {
			out = append(out, str(e))
		}
		return out
	case map[any]any: // a RESP3 set
		out := make([]string, 0, len(x))
		for k := range x {
			out = append(out, str(k))
		}
		sort.Strings(out)
		return out
	}
	return nil
}
