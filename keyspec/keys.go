package keyspec

import "github.com/lockproxy/lockproxy/internal/valkeynum"

// Key is one key argument of a concrete command.
type Key struct {
	Index int      // position in args (args[0] is the command name)
	Flags KeyFlags // the flags of the key spec that found it
}

// Status tells how far Keys could resolve a concrete command.
type Status uint8

const (
	// OK: the keys in dst are exactly the keys the server would find, with
	// the server's flags.
	OK Status = iota
	// UnknownCommand: no such command, or no such subcommand of a container
	// command. The server will reply with an error.
	UnknownCommand
	// ArityError: the argument count does not fit the command's arity. The
	// server rejects the command before running it; let it reply.
	ArityError
	// NeedsGetKeys: the key specs cannot resolve these arguments (a spec of
	// unknown type, an INCOMPLETE spec, a numkeys argument that is not a
	// number, keys beyond the last argument, or a command with movable keys
	// but no key specs). The server then falls back to the command's own
	// key finder, so ask it with COMMAND GETKEYSANDFLAGS and parse the
	// answer with GetKeysAndFlags. dst still receives whatever the usable
	// specs found (like the server's GET_KEYSPEC_RETURN_PARTIAL): it may
	// miss keys and may include arguments that are not keys (MIGRATE's
	// empty key placeholder before KEYS), so it is for logging, not for
	// decisions.
	NeedsGetKeys
	// VariableFlags: the key positions in dst are exact, but a spec is
	// marked VARIABLE_FLAGS, so the real flags depend on other arguments
	// (SET k v GET reads k, SET k v does not; BITFIELD k GET ... only
	// reads). The flags in dst are the spec's declared flags, which
	// describe the widest behaviour (for SET and BITFIELD they claim a
	// write, which covers both cases), and carry KeyVariableFlags. Ask
	// COMMAND GETKEYSANDFLAGS when the exact flags matter; the positions
	// need no round trip.
	VariableFlags
)

var statusNames = [...]string{"OK", "UnknownCommand", "ArityError", "NeedsGetKeys", "VariableFlags"}

func (s Status) String() string {
	if int(s) < len(statusNames) {
		return statusNames[s]
	}
	return "Status(?)"
}

// Keys resolves args as the server would (see Table.Command) and appends
// the position and flags of each key argument to dst, in the server's
// order. It allocates nothing when dst has room for the keys.
func (t *Table) Keys(args [][]byte, dst []Key) ([]Key, Status) {
	c := t.Command(args)
	if c == nil {
		return dst, UnknownCommand
	}
	return c.Keys(args, dst)
}

// ArityOK reports whether n arguments (the command name, and subcommand
// name, included) satisfy the command's arity, as the server checks before
// running it.
func (c *Command) ArityOK(n int) bool {
	return !((c.Arity > 0 && c.Arity != n) || n < -c.Arity)
}

// Keys appends the key arguments of args, a concrete invocation of c
// (args[0] is the command name), to dst. See Table.Keys and Status.
//
// The walk over the specs follows Valkey's getKeysUsingKeySpecs (db.c):
//   - specs marked NOT_KEY are skipped;
//   - begin_search index: the first key is at that index;
//   - begin_search keyword: search args[StartFrom], args[StartFrom+1], ...
//     up to but not including the last argument (a keyword there could not
//     be followed by a key); a negative StartFrom searches from
//     args[len+StartFrom] down to, but not including, args[1]. The first
//     match, compared in any ASCII letter case as C strings (up to a NUL
//     byte), puts the first key right after it; no match skips the spec,
//     since the keyword's clause is optional;
//   - find_keys range: last = first+LastKey for LastKey >= 0; else
//     len+LastKey when Limit is 0; else first + (len-first)/Limit + LastKey
//     (with LastKey -1: the first 1/Limit of the remaining arguments);
//   - find_keys keynum: the count is args[first+KeyNumIdx], parsed as
//     strictly as the server's string2ll and truncated to a C int like the
//     server does; keys start at first+FirstKey;
//   - keys are first, first+Step, ... up to last; first or last outside
//     the arguments, or last < first-1, makes the spec unusable (the server
//     then uses the command's key finder: NeedsGetKeys here);
//   - an INCOMPLETE spec still contributes its keys, but NeedsGetKeys.
//
// One deliberate difference: an empty range (last == first-1: a keynum
// count of 0, or nothing left after the first key position) contributes no
// keys and the spec stays usable, where the server calls last < first
// unusable, drops what every spec found and asks the command's own key
// finder. For every built-in command that finder then reports no keys at
// all: for EVAL/EVALSHA/FCALL and their _RO forms that is the right answer
// (EVAL s 0 names no keys), so here it resolves with no round trip; the
// others (ZUNIONSTORE d 0 a, SINTERCARD 0 a, LMPOP 0 a LEFT, XREAD
// STREAMS s with no ID) fail when run, so the other keys reported here
// (ZUNIONSTORE's destination) are never touched, and reporting them errs
// on the safe side. PFMERGE d, whose optional source list is empty, runs
// and writes d: the server's own key extraction misses d there (it
// answers "Invalid arguments"), Keys reports it.
func (c *Command) Keys(args [][]byte, dst []Key) ([]Key, Status) {
	argc := len(args)
	if !c.ArityOK(argc) {
		return dst, ArityError
	}
	if !c.hasKeySpec {
		// No spec names a key. A movable-keys command (a module's with a
		// getkeys callback) or one with only legacy positions (a server
		// without key specs) may still have keys that only the server can
		// find; anything else really has none (PING, CLIENT KILL, SPUBLISH
		// whose only spec is NOT_KEY).
		if c.Flags&MovableKeys != 0 || (len(c.KeySpecs) == 0 && c.FirstKey != 0) {
			return dst, NeedsGetKeys
		}
		return dst, OK
	}
	needs := false
	for i := range c.KeySpecs {
		s := &c.KeySpecs[i]
		if s.Flags&KeyNotKey != 0 {
			continue
		}
		var first int
		switch s.BeginSearch.Type {
		case BeginSearchIndex:
			first = s.BeginSearch.Index
		case BeginSearchKeyword:
			first = keywordSearch(args, s.BeginSearch.Keyword, s.BeginSearch.StartFrom)
			if first == 0 {
				continue // optional clause absent: no keys from this spec
			}
		default:
			needs = true
			continue
		}
		var last, step int
		switch s.FindKeys.Type {
		case FindKeysRange:
			step = s.FindKeys.Step
			switch {
			case s.FindKeys.LastKey >= 0:
				last = first + s.FindKeys.LastKey
			case s.FindKeys.Limit == 0:
				last = argc + s.FindKeys.LastKey
			case s.FindKeys.LastKey == -1 && s.FindKeys.Limit > 0:
				last = first + ((argc-first)/s.FindKeys.Limit + s.FindKeys.LastKey)
			default:
				// The server asserts LastKey == -1 with a limit; a spec
				// breaking that is not one it could run.
				needs = true
				continue
			}
		case FindKeysKeynum:
			step = s.FindKeys.Step
			at := first + s.FindKeys.KeyNumIdx
			if s.FindKeys.KeyNumIdx < 0 || at < 1 || at >= argc {
				needs = true
				continue
			}
			n, ok := valkeynum.String2ll(args[at])
			if !ok || n < 0 {
				needs = true // the server's key finder decides (it may use atoi)
				continue
			}
			first += s.FindKeys.FirstKey
			// (int)numkeys in the server: a count beyond a C int wraps.
			last = first + int(int32(n)) - 1
		default:
			needs = true
			continue
		}
		if last == first-1 {
			continue // an empty range: see the doc comment
		}
		if last >= argc || last < first || first >= argc || first < 1 || step < 1 {
			needs = true
			continue
		}
		for j := first; j <= last; j += step {
			dst = append(dst, Key{Index: j, Flags: s.Flags})
		}
		if s.BeginSearch.Type == BeginSearchKeyword && s.BeginSearch.StartFrom > 0 && last == first && s.Flags.Writes() {
			// A keyword may be repeated (GEORADIUS ... STORE a STORE b):
			// the spec names the key after the first, the command writes
			// the one after the last. Every key after the keyword counts
			// as written: a superset, so no write goes unseen.
			for j := keywordSearch(args, s.BeginSearch.Keyword, first+1); j != 0 && j < argc; j = keywordSearch(args, s.BeginSearch.Keyword, j+1) {
				dst = append(dst, Key{Index: j, Flags: s.Flags})
			}
		}
		if s.Flags&KeyIncomplete != 0 {
			needs = true
		}
	}
	switch {
	case needs:
		return dst, NeedsGetKeys
	case c.varFlags:
		return dst, VariableFlags
	}
	return dst, OK
}

// keywordSearch returns the index after the first args[i] equal to kw, or
// 0, searching as Valkey's getKeysUsingKeySpecs does (see Command.Keys).
func keywordSearch(args [][]byte, kw string, startfrom int) int {
	argc := len(args)
	start, end := startfrom, argc-1
	if startfrom <= 0 {
		start, end = argc+startfrom, 1
	}
	up := start <= end
	for i := start; i != end; {
		if i >= argc || i < 1 {
			break
		}
		if cstrEqualFold(args[i], kw) {
			return i + 1
		}
		if up {
			i++
		} else {
			i--
		}
	}
	return 0
}

// cstrEqualFold is strcasecmp(arg, kw) == 0 in the C locale: both sides end
// at their first NUL byte, and only ASCII letters fold.
func cstrEqualFold(arg []byte, kw string) bool {
	for i, c := range arg {
		if c == 0 {
			arg = arg[:i]
			break
		}
	}
	for i := 0; i < len(kw); i++ {
		if kw[i] == 0 {
			kw = kw[:i]
			break
		}
	}
	if len(arg) != len(kw) {
		return false
	}
	for i := range arg {
		a, b := arg[i], kw[i]
		if 'A' <= a && a <= 'Z' {
			a += 'a' - 'A'
		}
		if 'A' <= b && b <= 'Z' {
			b += 'a' - 'A'
		}
		if a != b {
			return false
		}
	}
	return true
}
