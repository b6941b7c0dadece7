// Package keyspec knows, for any command a client sends, which arguments
// are keys and what the command does to each of them, using the server's
// own key specifications rather than a list of command names, so that
// commands added by a newer Valkey (or a module) are covered the day the
// server offers them.
//
// It owns the command table and what a key's flags mean. It must not know
// lockproxy's rules, locks or sessions, and does no I/O besides Load's one
// COMMAND on the client it is given.
//
// # The table
//
// Load runs COMMAND on the server; FromCommandReply builds the same Table
// from a reply already at hand (go-redis v9's Do(...).Slice(), under RESP2
// or RESP3). Every command and every subcommand of a container command
// (CLIENT, OBJECT, XINFO, FUNCTION, SCRIPT, ...; named "client|kill") is a
// Command with its arity, its flags (Write, Readonly, Blocking, Pubsub,
// Noscript, Admin, MovableKeys, ...), its ACL categories and its key specs.
// The table is immutable and safe for concurrent use. Lookups fold ASCII
// case like the server and do not allocate.
//
// # Keys of a concrete command
//
// Table.Keys walks the key specs of the command in args exactly as
// Valkey's getKeysUsingKeySpecs (db.c) does and appends each key's
// argument index and flags to a caller-owned slice, without allocating.
// Its Status says how far the answer goes:
//
//   - OK: the keys and flags are the server's.
//   - VariableFlags: the positions are the server's, the flags are the
//     spec's declared ones (SET, BITFIELD: their real flags depend on
//     GET/SET sub-arguments). The declared flags are never weaker than the
//     real ones for Deletes, Overwrites, Writes and ReadOnly.
//   - NeedsGetKeys: only the server can tell (SORT, MIGRATE ... KEYS, an
//     unparsable numkeys). Send COMMAND GETKEYSANDFLAGS with the same
//     arguments and parse the answer with GetKeysAndFlags. An error answer
//     means the server finds no keys: the command will fail or touches none.
//   - ArityError, UnknownCommand: the server rejects the command before it
//     runs; let it reply.
//
// The one deliberate difference from the server's spec walk is an empty
// key range (EVAL s 0, ZUNIONSTORE d 0 a, PFMERGE d): Keys reports the
// other specs' keys where the server gives up on the specs and reports
// none. See Command.Keys.
//
// # What a key's flags mean for lockproxy
//
// KeyFlags.Deletes, Overwrites, Writes, ReadOnly and Accesses map the
// key-spec flags (RO/RW/OW/RM and ACCESS/UPDATE/INSERT/DELETE) to the
// questions lockproxy asks; each documents its mapping. Key specs cannot
// tell an expiry change from a value write (EXPIRE is RW+UPDATE like HSET),
// so Command.ExpiryOnly supplements them, documented there. Some effects
// are outside the specs altogether and the caller must handle them:
//
//   - Command.KeylessWrite: FLUSHALL, FLUSHDB, SWAPDB (every key), FUNCTION
//     LOAD/DELETE/FLUSH/RESTORE (code that writes keys later).
//   - Scripts (EVAL, FCALL) are reported with their declared keys only; a
//     script may touch undeclared keys on a non-cluster server.
//   - MOVE removes the key from the current database, but its spec says
//     RW+ACCESS+UPDATE, so it shows as an overwrite, not a deletion.
//   - Commands queued in MULTI are resolved one by one, like any other.
//
// # Blocking
//
// Command.Blocks tells whether a concrete command may block: the
// "blocking" flag, and for XREAD and XREADGROUP a BLOCK option, which the
// flag cannot express (blocking.go).
package keyspec
