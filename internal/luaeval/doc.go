// Package luaeval runs Lua scripts the way Valkey 8.0 runs EVAL, offline,
// against an in-memory keyspace, and returns the exact reply bytes the
// server would send.
//
// # What it is for
//
// lockproxy rewrites client commands into Lua scripts (token-checked
// release, SET NX + fencing-counter acquire, token-checked renewal, fenced
// writes). luaeval lets those scripts be unit-tested table-driven, with no
// server and no sleeping: a Store holds strings, hashes and sorted sets
// with per-key expiry against an injectable clock, so a test can acquire a
// lock, Advance the clock past the lease, and check what a late release
// replies, byte for byte.
//
//	s := luaeval.New()
//	s.SetTime(t0)
//	s.Eval(acquire, []string{"lock", "fence"}, []string{"abc", "1000"}) // "+OK\r\n"
//	s.Advance(1001 * time.Millisecond)
//	s.Eval(release, []string{"lock"}, []string{"abc"})                   // ":0\r\n"
//
// It is also a tool for offline analysis: what a script replies for a
// given keyspace, which errors it can raise and in what wording.
//
// luaeval is itself checked against a real valkey-server: the
// differential tests in this package replay every scenario on both and
// require identical bytes.
//
// # What it must not be
//
// It is not a Valkey replacement and must never serve real clients. It
// implements only the commands lockproxy's scripts and their tests use —
// GET SET SETNX SETEX PSETEX GETSET GETDEL GETEX MGET MSET INCR INCRBY
// DECR DECRBY, DEL UNLINK EXISTS TYPE, EXPIRE PEXPIRE EXPIREAT PEXPIREAT (NX XX GT LT)
// PERSIST TTL PTTL EXPIRETIME PEXPIRETIME, HGET HMGET HSET HMSET HSETNX
// HINCRBY HEXISTS HDEL HGETALL HLEN, ZADD ZREM ZSCORE ZCARD ZRANGEBYSCORE,
// PING ECHO DBSIZE TIME FLUSHALL FLUSHDB, and through Do: EVAL EVALSHA
// EVAL_RO EVALSHA_RO SCRIPT LOAD|EXISTS|FLUSH. Any other real Valkey
// command answers "ERR luaeval: command '<name>' is not implemented"
// (deliberately not Valkey's wording: a test that reaches it tests
// something luaeval cannot vouch for); a name Valkey does not know gets
// Valkey's own unknown-command error. Add a command only together with
// differential test cases for it.
//
// # Fidelity
//
// Matched exactly, and covered by the differential tests: reply bytes of
// every implemented command (RESP2 and RESP3), argument parsing and error
// texts; the Lua↔RESP conversion rules both ways, including redis.setresp;
// the error wording of redis.call failures ("<err> script: <sha1>, on
// @user_script:<line>."), of error(), of redis.error_reply and of the
// global-variable protection; Valkey's pcall, which turns error tables
// into their err string; number formatting (Lua's "%.14g" for tostring,
// '..', string.format and table.concat; Valkey's Grisu2-based fpconv for
// numbers passed to redis.call and for double replies); expiry at
// millisecond resolution with time frozen for the length of a script.
//
// Known differences, all deliberate or inherent in running on gopher-lua:
//
//   - Messages that the Lua VM itself produces (indexing nil, arithmetic on
//     nil, bad arguments to library functions, syntax errors) have
//     gopher-lua's wording. The surrounding "ERR user_script:<line>: ...
//     script: <sha1>, on @user_script:<line>." and the line numbers are
//     Valkey's; compile errors keep "Error compiling script (new function):
//     user_script:<line>:" and the token.
//   - Number-to-string coercion outside tostring, '..', string.format,
//     table.concat, error() and redis.call arguments (for example a number
//     passed to string.len, or '..' inside a chunk made by loadstring)
//     uses gopher-lua's shortest round-trip formatting, not "%.14g".
//   - pairs/next, and {map=...}/{set=...} return values, iterate in
//     insertion order, not C Lua's hash order.
//   - Libraries: base, table, string, math, coroutine and os.clock, as in
//     Valkey, but no cjson, cmsgpack, struct or bit; os.clock returns 0;
//     collectgarbage and gcinfo do nothing; math.random is gopher-lua's.
//   - Read-only protection refuses new globals and new fields in the
//     library and redis tables with Valkey's message, but does not refuse
//     overwriting an existing entry. Each script runs in a fresh Lua state,
//     so nothing can leak from one script to the next either way.
//   - error() with a table that has no err string crashes Valkey 8.0.1
//     (fixed upstream in valkey-io/valkey#2229); luaeval replies with an
//     error that says so.
//   - A script running longer than Store.ScriptTimeout is aborted with an
//     error; Valkey would keep running it and answer others with BUSY.
//   - Converting a self-referencing or very deep table stops at depth 1000
//     with "ERR reached lua stack limit"; Valkey stops at a depth that
//     depends on its C stack.
//   - Hash replies keep insertion order and a sorted set stores -0 as 0,
//     as Valkey's compact (listpack) encodings do; Valkey switches to
//     unordered hashes past 128 fields or 64-byte values and to skiplists
//     past 128 members, where both details change.
//   - One database; no SELECT, replication, keyspace notifications, ACLs
//     (redis.acl_check_cmd allows every command), memory limits or cluster
//     checks; expiry is lazy only, so DBSIZE counts live keys exactly,
//     where Valkey may still count keys that expired but were not yet
//     reclaimed; the script cache never evicts.
//
// Like Valkey, luaeval does not sanitise CR/LF inside errors raised by a
// script (error("a\nb")): those bytes go out as they are, so a test sees
// what a proxy would receive.
//
// Each script costs about 0.1–0.2 ms (a fresh Lua state with its
// libraries), which keeps thousands of scripted test steps well under a
// second.
package luaeval
