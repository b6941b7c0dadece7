package keyspec

import "fmt"

// KeyWithFlags is one key from a COMMAND GETKEYSANDFLAGS answer. The server
// answers with key names, not positions: a name that occurs twice in the
// command's arguments cannot be mapped back to one position.
type KeyWithFlags struct {
	Key   string
	Flags KeyFlags
}

// GetKeysAndFlags parses the reply to COMMAND GETKEYSANDFLAGS, as go-redis
// v9 returns it from Do(...).Slice() under RESP2 or RESP3: an array of
// [key, [flag, ...]] pairs. Unknown flags are ignored. A key whose flags
// are empty (a getkeys callback that sets none) has no access type, which
// the KeyFlags helpers treat as "may do anything".
//
// The server answers an error instead when the command has no key
// arguments at all ("The command has no key arguments"), when the
// arguments are invalid ("Invalid arguments specified for command": the
// command would fail anyway) or when the arity is wrong; go-redis returns
// those as the error of Slice(), before this function is reached.
func GetKeysAndFlags(reply []interface{}) ([]KeyWithFlags, error) {
	out := make([]KeyWithFlags, 0, len(reply))
	for i, e := range reply {
		pair, ok := e.([]interface{})
		if !ok || len(pair) != 2 {
			return nil, fmt.Errorf("keyspec: GETKEYSANDFLAGS entry %d is %T %v, want [key, flags]", i, e, e)
		}
		key, ok := asString(pair[0])
		if !ok {
			return nil, fmt.Errorf("keyspec: GETKEYSANDFLAGS entry %d: key is %T", i, pair[0])
		}
		flags, ok := asStringList(pair[1])
		if !ok {
			return nil, fmt.Errorf("keyspec: GETKEYSANDFLAGS entry %d: flags are %T", i, pair[1])
		}
		kf := KeyWithFlags{Key: key}
		for _, f := range flags {
			kf.Flags |= ParseKeyFlag(f)
		}
		out = append(out, kf)
	}
	return out, nil
}
