// Package scriptcheck reads Lua scripts (EVAL bodies and FUNCTION LOAD
// libraries) with gopher-lua's parser and tells, for each key a script
// receives, what it does to that key if the key is a lock:
//
//   - Guarded: every delete, expiry change or overwrite of the key (DEL,
//     UNLINK, GETDEL, EXPIRE, PEXPIRE, PERSIST, SET without NX, HSET,
//     HINCRBY, ...) runs only under a condition that compared the key's
//     current value, or for hash locks an owner field, with an argument of
//     the script (ARGV[j], or a value computed from arguments): the
//     token-checked release and renewal shapes. A script that never changes
//     the key is Guarded too.
//   - Acquire: it only creates the key: SET ... NX, SETNX, HSETNX, or
//     writes under a condition that the key does not exist (EXISTS == 0,
//     GET == false).
//   - Blind: some path deletes, expires or overwrites the key with no such
//     check before it: an unconditional DEL, a DEL before the compare, a
//     compare against a constant or against another key's value.
//   - Unknown: the analysis cannot tell: a command name that is not a
//     literal, a command it does not know, a key index it cannot follow (a
//     loop over KEYS it does not recognise, KEYS[n] with n computed),
//     goto, loadstring and other dynamic code, or a script it cannot parse.
//
// # What counts as a guard
//
// The analysis is an abstract interpretation of the script: it follows
// values from KEYS[i] and ARGV[j] through locals, tables and helper
// functions, and carries along each path the facts the conditions on that
// path establish. A condition establishes "KEYS[i] is guarded" when it is
// an equality between the reply of GET KEYS[i] (or of MGET, indexed) and an
// argument; HEXISTS KEYS[i] <arg> == 1; HGET KEYS[i] <field> compared with
// an argument, or HGET KEYS[i] <arg> truthy. It establishes "KEYS[i] is
// absent" for GET == false, not GET, EXISTS == 0, and the truthy reply of
// SET NX / SETNX / HSETNX. Facts flow through `and`, `or` and `not`, into
// the branch they hold in, and past an `if` whose other branch returns or
// raises an error (the `~=` with early return shape), and past assert().
// A loop `for i = 1, #KEYS` or `for _, k in ipairs(KEYS)` (or over MGET's
// reply) is understood: a check inside the body guards the same key, and a
// check with an early return guards every key after the loop.
//
// Keys a script names itself rather than receiving them in KEYS are
// reported too when the name is built from ARGV, KEYS and constants only
// (redis.call('DEL', ARGV[1]), KEYS[1] .. ':lock'): the proxy resolves
// those names with the actual arguments. Names computed from stored data
// are not followed (Valkey Cluster forbids such keys too).
//
// Which arguments of a command are keys, and what the command does to
// them, comes from the server's command table once the proxy has loaded it
// (UseTable: key specs and flags), and otherwise from the same facts
// written out (commands.go); a command neither knows makes its keys Unknown.
//
// The analysis is conservative where it cannot follow the script (Unknown),
// but it trusts what it reads: a comparison with any argument counts as a
// token check. It defends against mistaken clients, not hostile ones.
//
// It owns the analysis and the bounded cache of verdicts by SHA1 (Cache).
// It must not know the lock rules (the caller decides which keys are locks)
// and does no I/O: it never fetches a script from Valkey.
package scriptcheck
