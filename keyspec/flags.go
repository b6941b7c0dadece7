package keyspec

import (
	"strings"
)

// Flags is a command's flag set, as the server lists it in the third field
// of a COMMAND entry ("write", "readonly", "blocking", ...).
type Flags uint64

// Command flags. The names follow the server's strings; flags the server
// reports that are not listed here (a newer server's, a module's) are
// ignored rather than rejected, so that a new server never breaks loading.
const (
	Write           Flags = 1 << iota // "write": may modify the keyspace
	Readonly                          // "readonly": only reads keys
	Denyoom                           // "denyoom": may grow memory; refused when OOM
	Module                            // "module": implemented by a module
	Admin                             // "admin": administrative (CONFIG, DEBUG, ...)
	Pubsub                            // "pubsub": publish/subscribe related
	Noscript                          // "noscript": not allowed from scripts
	Blocking                          // "blocking": may block the client
	Loading                           // "loading": allowed while the dataset loads
	Stale                             // "stale": allowed on a replica with stale data
	SkipMonitor                       // "skip_monitor": not shown to MONITOR
	SkipSlowlog                       // "skip_slowlog": not logged to the slowlog
	Asking                            // "asking": cluster ASKING semantics
	Fast                              // "fast": O(1) or O(log N)
	NoAuth                            // "no_auth": allowed before AUTH
	MayReplicate                      // "may_replicate": may propagate to replicas
	NoMandatoryKeys                   // "no_mandatory_keys": may be called with zero keys
	NoAsyncLoading                    // "no_async_loading": refused during async loading
	NoMulti                           // "no_multi": not allowed inside MULTI
	MovableKeys                       // "movablekeys": key positions depend on the arguments
	AllowBusy                         // "allow_busy": allowed while a script is busy
)

var cmdFlagNames = []struct {
	f    Flags
	name string
}{
	{Write, "write"},
	{Readonly, "readonly"},
	{Denyoom, "denyoom"},
	{Module, "module"},
	{Admin, "admin"},
	{Pubsub, "pubsub"},
	{Noscript, "noscript"},
	{Blocking, "blocking"},
	{Loading, "loading"},
	{Stale, "stale"},
	{SkipMonitor, "skip_monitor"},
	{SkipSlowlog, "skip_slowlog"},
	{Asking, "asking"},
	{Fast, "fast"},
	{NoAuth, "no_auth"},
	{MayReplicate, "may_replicate"},
	{NoMandatoryKeys, "no_mandatory_keys"},
	{NoAsyncLoading, "no_async_loading"},
	{NoMulti, "no_multi"},
	{MovableKeys, "movablekeys"},
	{AllowBusy, "allow_busy"},
}

// ParseFlag returns the flag named s (any letter case), or 0 when s names
// no flag this package knows.
func ParseFlag(s string) Flags {
	for _, n := range cmdFlagNames {
		if strings.EqualFold(n.name, s) {
			return n.f
		}
	}
	return 0
}

// Has reports whether every flag in g is set in f.
func (f Flags) Has(g Flags) bool { return f&g == g }

// String lists the set flags with the server's names, space-separated.
func (f Flags) String() string {
	var b strings.Builder
	for _, n := range cmdFlagNames {
		if f&n.f != 0 {
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(n.name)
		}
	}
	return b.String()
}

// KeyFlags is a key spec's flag set, and the flags of one key found in a
// concrete command. The meanings are those of the server's key-specs
// documentation:
//
// Access type (exactly one is expected on every real key):
//   - RO: reads the value of the key, but does not necessarily return it.
//   - RW: read-write; modifies the data stored in the value or its metadata.
//   - OW: overwrites the data stored in the value of the key.
//   - RM: deletes the key.
//
// Logical operation (zero or more), describing what is done to the value:
//   - ACCESS: returns, copies or uses the user data of the value.
//   - UPDATE: updates data of the value; the new value may depend on the old.
//   - INSERT: adds data to the value, without modifying or deleting existing data.
//   - DELETE: explicitly deletes some content from the value.
//
// Others:
//   - NOT_KEY: the argument is not a key (e.g. a shard channel); it is skipped.
//   - INCOMPLETE: the spec may not find every key (e.g. MIGRATE's KEYS).
//   - VARIABLE_FLAGS: the real flags depend on other arguments (e.g. SET ... GET).
type KeyFlags uint32

// Key-spec flags. Names follow the server's strings (RO, RW, OW, RM,
// access, update, insert, delete, not_key, incomplete, variable_flags).
const (
	KeyRO KeyFlags = 1 << iota
	KeyRW
	KeyOW
	KeyRM
	KeyAccess
	KeyUpdate
	KeyInsert
	KeyDelete
	KeyNotKey
	KeyIncomplete
	KeyVariableFlags
)

var keyFlagNames = []struct {
	f    KeyFlags
	name string
}{
	{KeyRO, "RO"},
	{KeyRW, "RW"},
	{KeyOW, "OW"},
	{KeyRM, "RM"},
	{KeyAccess, "access"},
	{KeyUpdate, "update"},
	{KeyInsert, "insert"},
	{KeyDelete, "delete"},
	{KeyNotKey, "not_key"},
	{KeyIncomplete, "incomplete"},
	{KeyVariableFlags, "variable_flags"},
}

// ParseKeyFlag returns the key-spec flag named s (any letter case), or 0
// when s names no flag this package knows.
func ParseKeyFlag(s string) KeyFlags {
	for _, n := range keyFlagNames {
		if strings.EqualFold(n.name, s) {
			return n.f
		}
	}
	return 0
}

// String lists the set flags with the server's names, space-separated.
func (f KeyFlags) String() string {
	var b strings.Builder
	for _, n := range keyFlagNames {
		if f&n.f != 0 {
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(n.name)
		}
	}
	return b.String()
}

const (
	accessTypes = KeyRO | KeyRW | KeyOW | KeyRM
	logicalOps  = KeyAccess | KeyUpdate | KeyInsert | KeyDelete
	writeFlags  = KeyRW | KeyOW | KeyRM | KeyUpdate | KeyInsert | KeyDelete
)

// unknownAccess reports a key whose flags declare no access type (none of
// RO, RW, OW, RM). Every built-in spec of Valkey 8 and Redis 7 declares one,
// but a module's spec or a GETKEYSANDFLAGS answer from a getkeys callback
// may carry no flags at all; such a key is assumed to do anything, since
// lockproxy must not mistake an unknown effect for a harmless one.
func (f KeyFlags) unknownAccess() bool { return f&accessTypes == 0 && f&KeyNotKey == 0 }

// Deletes reports whether the key may be deleted, wholly or in part: RM
// (the key is removed: DEL, UNLINK) or DELETE (content is removed from the
// value: GETDEL, LPOP, HDEL, RENAME's source, MIGRATE; removing the last
// element of a container removes the key too). Also true for a key with
// no access-type flag (see Writes).
//
// MOVE is a known gap of the server's specs: it removes the key from the
// current database but is declared RW+ACCESS+UPDATE, so Deletes is false
// for it while Overwrites and Writes are true.
func (f KeyFlags) Deletes() bool { return f&(KeyRM|KeyDelete) != 0 || f.unknownAccess() }

// Overwrites reports whether the stored value may change, so that a reader
// comparing it with what it wrote earlier (a lock token) may see something
// else:
//   - OW: the value is overwritten (SET, SETNX, MSET, RESTORE, RENAME's and
//     COPY's destination, *STORE destinations);
//   - UPDATE: data in the value is updated (INCR, SETRANGE, HSET, GETSET,
//     EVAL/FCALL keys, and also EXPIRE/PEXPIRE/EXPIREAT/PEXPIREAT/PERSIST/
//     GETEX, whose "update" is to the TTL only: see Command.ExpiryOnly);
//   - INSERT: data is added to the value (APPEND, LPUSH, SADD, HSETNX). The
//     specs promise no existing data changes, but the value as a whole does
//     (APPEND turns token "t" into "tx"), so it counts;
//   - RW with no logical-operation flag at all: the spec says the key is
//     modified but not how, so the worst is assumed; likewise a key with no
//     access-type flag (see Writes).
//
// RW+ACCESS alone (PFCOUNT, which may rewrite its cached cardinality) and
// RW+DELETE (see Deletes) are not overwrites.
func (f KeyFlags) Overwrites() bool {
	if f&(KeyOW|KeyUpdate|KeyInsert) != 0 || f.unknownAccess() {
		return true
	}
	return f&KeyRW != 0 && f&logicalOps == 0
}

// Writes reports whether the key may be modified in any way: any of RW,
// OW, RM, INSERT, UPDATE, DELETE. It is true whenever Deletes or
// Overwrites is, and for a key whose flags declare no access type (none of
// RO, RW, OW, RM: a module's key or a getkeys callback's answer without
// flags), whose effect is unknown and so assumed to be the worst.
func (f KeyFlags) Writes() bool { return f&writeFlags != 0 || f.unknownAccess() }

// ReadOnly reports whether the key is only read: RO is set and no flag
// that Writes looks for is (RO, possibly with ACCESS: GET, EXISTS, TTL,
// OBJECT ENCODING, COPY's source).
func (f KeyFlags) ReadOnly() bool { return f&KeyRO != 0 && f&writeFlags == 0 }

// Accesses reports ACCESS: the user data of the value is returned, copied
// or used (GET, GETDEL, GETSET, SET ... GET, COPY's source).
func (f KeyFlags) Accesses() bool { return f&KeyAccess != 0 }
