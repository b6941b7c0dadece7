package keyspec

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Field positions in a COMMAND entry. Redis 6 stops after aclCategories;
// Valkey 7+/Redis 7+ add tips, key specs and subcommands.
const (
	fieldName = iota
	fieldArity
	fieldFlags
	fieldFirstKey
	fieldLastKey
	fieldStep
	fieldACLCategories
	fieldTips
	fieldKeySpecs
	fieldSubcommands
)

func parseCommand(e interface{}, parent *Command) (*Command, error) {
	f, ok := e.([]interface{})
	if !ok {
		return nil, fmt.Errorf("entry is %T, want an array", e)
	}
	if len(f) <= fieldStep {
		return nil, fmt.Errorf("entry has %d fields, want at least %d", len(f), fieldStep+1)
	}
	name, ok := asString(f[fieldName])
	if !ok || name == "" {
		return nil, fmt.Errorf("name is %T %v", f[fieldName], f[fieldName])
	}
	c := &Command{Name: strings.ToLower(name), Parent: parent}
	if parent != nil {
		c.Upper = parent.Upper
	} else {
		c.Upper = strings.ToUpper(name)
	}
	var err error
	if c.Arity, err = intField(f, fieldArity, c.Name, "arity"); err != nil {
		return nil, err
	}
	flags, ok := asStringList(f[fieldFlags])
	if !ok {
		return nil, fmt.Errorf("%s: flags are %T", c.Name, f[fieldFlags])
	}
	for _, s := range flags {
		c.Flags |= ParseFlag(s)
	}
	if c.FirstKey, err = intField(f, fieldFirstKey, c.Name, "first key"); err != nil {
		return nil, err
	}
	if c.LastKey, err = intField(f, fieldLastKey, c.Name, "last key"); err != nil {
		return nil, err
	}
	if c.Step, err = intField(f, fieldStep, c.Name, "step"); err != nil {
		return nil, err
	}
	if len(f) > fieldACLCategories {
		c.ACLCategories, _ = asStringList(f[fieldACLCategories])
	}
	if len(f) > fieldTips {
		c.Tips, _ = asStringList(f[fieldTips])
	}
	if len(f) > fieldKeySpecs && f[fieldKeySpecs] != nil {
		specs, ok := f[fieldKeySpecs].([]interface{})
		if !ok {
			return nil, fmt.Errorf("%s: key specs are %T", c.Name, f[fieldKeySpecs])
		}
		for j, s := range specs {
			ks, err := parseKeySpec(s)
			if err != nil {
				return nil, fmt.Errorf("%s: key spec %d: %w", c.Name, j, err)
			}
			c.KeySpecs = append(c.KeySpecs, ks)
		}
	}
	if len(f) > fieldSubcommands && f[fieldSubcommands] != nil {
		subs, ok := f[fieldSubcommands].([]interface{})
		if !ok {
			return nil, fmt.Errorf("%s: subcommands are %T", c.Name, f[fieldSubcommands])
		}
		for _, s := range subs {
			if s == nil {
				continue
			}
			sc, err := parseCommand(s, c)
			if err != nil {
				return nil, fmt.Errorf("%s: subcommand: %w", c.Name, err)
			}
			if c.Subcommands == nil {
				c.Subcommands = make(map[string]*Command, len(subs))
			}
			c.Subcommands[sc.SubcommandName()] = sc
		}
	}
	c.derive()
	return c, nil
}

func intField(f []interface{}, i int, name, what string) (int, error) {
	n, ok := asInt(f[i])
	if !ok {
		return 0, fmt.Errorf("%s: %s is %T %v", name, what, f[i], f[i])
	}
	return n, nil
}

func parseKeySpec(v interface{}) (KeySpec, error) {
	var ks KeySpec
	m, err := asFields(v)
	if err != nil {
		return ks, err
	}
	if flags, ok := asStringList(m["flags"]); ok {
		for _, s := range flags {
			ks.Flags |= ParseKeyFlag(s)
		}
	}
	ks.Notes, _ = asString(m["notes"])
	// A part that is missing or malformed stays Unknown: Keys then defers
	// to the server instead of guessing.
	if bs, err := asFields(m["begin_search"]); err == nil {
		spec, _ := asFields(bs["spec"])
		typ, _ := asString(bs["type"])
		switch strings.ToLower(typ) {
		case "index":
			if n, ok := asInt(spec["index"]); ok {
				ks.BeginSearch = BeginSearch{Type: BeginSearchIndex, Index: n}
			}
		case "keyword":
			kw, ok1 := asString(spec["keyword"])
			from, ok2 := asInt(spec["startfrom"])
			if ok1 && ok2 {
				ks.BeginSearch = BeginSearch{Type: BeginSearchKeyword, Keyword: kw, StartFrom: from}
			}
		}
	}
	if fk, err := asFields(m["find_keys"]); err == nil {
		spec, _ := asFields(fk["spec"])
		typ, _ := asString(fk["type"])
		switch strings.ToLower(typ) {
		case "range":
			last, ok1 := asInt(spec["lastkey"])
			step, ok2 := asInt(spec["keystep"])
			limit, ok3 := asInt(spec["limit"])
			if ok1 && ok2 && ok3 {
				ks.FindKeys = FindKeys{Type: FindKeysRange, LastKey: last, Step: step, Limit: limit}
			}
		case "keynum":
			idx, ok1 := asInt(spec["keynumidx"])
			first, ok2 := asInt(spec["firstkey"])
			step, ok3 := asInt(spec["keystep"])
			if ok1 && ok2 && ok3 {
				ks.FindKeys = FindKeys{Type: FindKeysKeynum, KeyNumIdx: idx, FirstKey: first, Step: step}
			}
		}
	}
	return ks, nil
}

// asFields turns a field/value collection into a map with lower-case keys:
// a RESP2 flat array [k1, v1, k2, v2, ...] or a RESP3 map as go-redis
// decodes it (map[interface{}]interface{}), or a map[string]interface{}.
func asFields(v interface{}) (map[string]interface{}, error) {
	switch x := v.(type) {
	case []interface{}:
		if len(x)%2 != 0 {
			return nil, fmt.Errorf("field list has odd length %d", len(x))
		}
		m := make(map[string]interface{}, len(x)/2)
		for i := 0; i < len(x); i += 2 {
			k, ok := asString(x[i])
			if !ok {
				return nil, fmt.Errorf("field name is %T", x[i])
			}
			m[strings.ToLower(k)] = x[i+1]
		}
		return m, nil
	case map[interface{}]interface{}:
		m := make(map[string]interface{}, len(x))
		for k, val := range x {
			ks, ok := asString(k)
			if !ok {
				return nil, fmt.Errorf("field name is %T", k)
			}
			m[strings.ToLower(ks)] = val
		}
		return m, nil
	case map[string]interface{}:
		m := make(map[string]interface{}, len(x))
		for k, val := range x {
			m[strings.ToLower(k)] = val
		}
		return m, nil
	case nil:
		return nil, fmt.Errorf("missing")
	}
	return nil, fmt.Errorf("fields are %T", v)
}

func asString(v interface{}) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case []byte:
		return string(x), true
	}
	return "", false
}

// asStringList accepts an array of strings (RESP2 array, or RESP3 set as
// go-redis decodes it), or a map whose keys are the members (a RESP3 set as
// some decoders build it).
func asStringList(v interface{}) ([]string, bool) {
	switch x := v.(type) {
	case []interface{}:
		out := make([]string, 0, len(x))
		for _, e := range x {
			if s, ok := asString(e); ok {
				out = append(out, s)
			}
		}
		return out, true
	case []string:
		return append([]string(nil), x...), true
	case map[interface{}]interface{}:
		out := make([]string, 0, len(x))
		for k := range x {
			if s, ok := asString(k); ok {
				out = append(out, s)
			}
		}
		return out, true
	case map[string]interface{}:
		out := make([]string, 0, len(x))
		for k := range x {
			out = append(out, k)
		}
		return out, true
	case nil:
		return nil, true
	}
	return nil, false
}

// asInt accepts the integer forms a reply may take: go-redis gives int64,
// but callers building replies by hand may use other integer types, an
// integral float (RESP3 double) or a decimal string.
func asInt(v interface{}) (int, bool) {
	var n int64
	switch x := v.(type) {
	case int64:
		n = x
	case int:
		n = int64(x)
	case int32:
		n = int64(x)
	case int16:
		n = int64(x)
	case int8:
		n = int64(x)
	case uint64:
		if x > math.MaxInt32 {
			return 0, false
		}
		n = int64(x)
	case uint32:
		n = int64(x)
	case float64:
		if x != math.Trunc(x) || x > math.MaxInt32 || x < math.MinInt32 {
			return 0, false
		}
		n = int64(x)
	case string:
		var err error
		if n, err = strconv.ParseInt(x, 10, 64); err != nil {
			return 0, false
		}
	case []byte:
		var err error
		if n, err = strconv.ParseInt(string(x), 10, 64); err != nil {
			return 0, false
		}
	default:
		return 0, false
	}
	// Positions and counts beyond int32 are nonsense; refusing them keeps
	// the arithmetic in Keys free of overflow on any platform.
	if n > math.MaxInt32 || n < math.MinInt32 {
		return 0, false
	}
	return int(n), true
}
