package rewrite

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/lockproxy/lockproxy/policy"
)

// Every error a client gets because of a lock rule. One code word, then what
// happened (command, key, rule) and what to do instead:
//
//	NOTOWNER      a release or renewal from a client that holds no grant of
//	              the lock through this proxy (it may be another client's)
//	TOKENRELEASE  a blind release under `release: reject`
//	LOCKED        a command that would overwrite or remove a lock
//	              (SET without NX, GETSET, RENAME, FLUSHALL under on_flush: reject, ...)
//	              or write one of lockproxy's own keys, or move a lock
//	              or a guarded key to another database (COPY ... DB,
//	              MOVE, MIGRATE)
//	UNFENCED      a write to a guarded key without a grant of its lock
//	STALE         a fenced write with a superseded token (worded by the
//	              Fenced script itself, which knows the numbers)
//	LEASE         a lease longer than the rule's max_lease, or none
//	UNSUPPORTED   a command on a lock key, a key a lock guards or one of
//	              lockproxy's own keys that lockproxy cannot read exactly
//	              as Valkey would (fail closed: never forwarded unread)
//
// And for scripts:
//
//	NOSCRIPT  an EVALSHA of a script lockproxy has not seen: clients that
//	          fall back to EVAL on NOSCRIPT then send the body, which runs
//	          under the monitor
//	ERR       an FCALL of a function whose library carries no monitor
//	          (loaded around lockproxy), or of a monitored registration's
//	          own name; a FUNCTION RESTORE payload lockproxy cannot read
//
// What lockproxy's scripts answer from inside Valkey is worded in their Lua,
// which knows the numbers: STALE, LEASE and LOCKDELAY in scripts.go's
// scripts, and the monitor's refusals (NOTOWNER, LOCKED, STALE, UNFENCED,
// LEASE, LOCKDELAY) in monitor.lua. TestErrorTextsOnlyInCatalogue keeps
// every other Go file of the package from writing a text of its own.

// canonicalRelease is the release every refusal points to.
const canonicalRelease = `EVAL "if redis.call('GET',KEYS[1])==ARGV[1] then return redis.call('DEL',KEYS[1]) else return 0 end" 1 <key> <token>`

func quoteKey(k []byte) string {
	if len(k) > 100 {
		return strconv.Quote(string(k[:100])) + "..."
	}
	return strconv.Quote(string(k))
}

func ruleName(r *policy.Rule) string {
	return fmt.Sprintf("rule %d %q", r.Index+1, r.Pattern.String())
}

func errNotOwnerRelease(cmd string, key []byte, r *policy.Rule, owner string) string {
	if r.Session == policy.SessionUser {
		return errNotOwnerUser(cmd, key, r, owner)
	}
	return fmt.Sprintf("NOTOWNER lockproxy refused %s of lock key %s (%s): Valkey holds no grant of it to this client (owner %s, session: %s), so it may be another client's lock; release with the token you acquired it with: %s",
		cmd, quoteKey(key), ruleName(r), owner, r.Session, canonicalRelease)
}

func errRejectRelease(cmd string, key []byte, r *policy.Rule) string {
	return fmt.Sprintf("TOKENRELEASE lockproxy refused the blind %s of lock key %s (%s, release: reject): a blind delete can remove a successor's lock after your lease ran out; release with your token: %s",
		cmd, quoteKey(key), ruleName(r), canonicalRelease)
}

func errNotOwnerRenew(cmd string, key []byte, r *policy.Rule, owner string) string {
	if r.Session == policy.SessionUser {
		return errNotOwnerUser(cmd, key, r, owner)
	}
	return fmt.Sprintf("NOTOWNER lockproxy refused %s of lock key %s (%s): Valkey holds no grant of it to this client (owner %s, session: %s), and only the client that acquired the lock through lockproxy may change its lease; acquire it with SET key token NX PX ms first",
		cmd, quoteKey(key), ruleName(r), owner, r.Session)
}

// errNotOwnerUser is both refusals above under session: user, where no
// token helps: only the holder's user may change the lock.
func errNotOwnerUser(cmd string, key []byte, r *policy.Rule, owner string) string {
	return fmt.Sprintf("NOTOWNER lockproxy refused %s of lock key %s (%s): Valkey holds no grant of it to this client's user (owner %s, session: user), and only the user that acquired the lock through lockproxy may change it; log in as that user (AUTH) to release or renew it",
		cmd, quoteKey(key), ruleName(r), owner)
}

func errLocked(cmd string, key []byte, r *policy.Rule) string {
	return fmt.Sprintf("LOCKED lockproxy refused %s on lock key %s (%s): it would overwrite or remove a lock that another client may hold; acquire with SET key token NX PX ms and release with your token: %s",
		cmd, quoteKey(key), ruleName(r), canonicalRelease)
}

func errOwnKey(cmd string, key []byte) string {
	return fmt.Sprintf("LOCKED lockproxy refused %s on %s: it is one of lockproxy's own keys (a grant counter, owner records, the locks' index, fencing marks or the key a WAIT is prepared with), which only lockproxy's scripts may change; read it if you need to, with GET, HGETALL or EVAL_RO", cmd, quoteKey(key))
}

const errScriptDebug = "LOCKED lockproxy refused SCRIPT DEBUG: Valkey's Lua debugger runs the commands and Lua typed into it without lockproxy's checks, on an upstream connection lockproxy shares between clients; debug the script against a Valkey of your own, directly (valkey-cli --ldb)"

func errLeaseChange(cmd string, key []byte, maxMS int64) string {
	return fmt.Sprintf("LEASE lockproxy refused %s of %s: it would give the lock a lease longer than %d ms, or none (the rule's max_lease, which the lock delay after a change of primary assumes); renew it for at most %d ms at a time", cmd, quoteKey(key), maxMS, maxMS)
}

func errFlush(cmd string) string {
	return fmt.Sprintf("LOCKED lockproxy refused %s: it would delete every lock without checking who holds it (on_flush: reject); delete keys by name, or set on_flush: allow in the lockproxy config", cmd)
}

func errMixedFence(cmd string, key []byte) string {
	return fmt.Sprintf("LOCKED lockproxy refused %s: it deletes lock keys together with %s, a key a lock guards, whose delete must pass the lock's fence; send the guarded keys in a command of their own",
		cmd, quoteKey(key))
}

func errUnfenced(cmd string, key []byte, r *policy.Rule) string {
	return "UNFENCED lockproxy refused " + cmd + " on " + quoteKey(key) + " (" + ruleName(r) +
		", unfenced_writes: reject): the key is guarded by a lock and this client holds no grant of it; acquire the lock (SET <lock> <token> NX PX <ms>) before writing, or set unfenced_writes: allow"
}

// errFencedBlocking: a blocking command that writes a guarded key (the
// fence check cannot wait).
func errFencedBlocking(cmd string, key []byte) string {
	return fmt.Sprintf("LOCKED lockproxy refused %s: it writes %s, a key a lock guards, and the fence check that write must pass runs it where it cannot block (it would answer at once instead of waiting); use the command's non-blocking form (LPOP for BLPOP, XREADGROUP without BLOCK, ...) and retry, holding the lock",
		cmd, quoteKey(key))
}

func errUnseenSHA(sha []byte) string {
	return fmt.Sprintf("NOSCRIPT lockproxy has not seen script %s, so it cannot run it under its monitor; send the script with EVAL or SCRIPT LOAD through lockproxy", quoteKey(sha))
}

func errFcallOwnName(name []byte) string {
	return fmt.Sprintf("ERR lockproxy refused FCALL of %q: a name ending in %s is the registration of a monitored library's function that lockproxy calls itself, with its own arguments; call the function by its own name", name, fnSuffix)
}

func errFcallUnmonitored(fn string) string {
	return fmt.Sprintf("ERR Function not found, or its library was loaded around lockproxy, without lockproxy's monitor inside (FUNCTION LOAD or RESTORE sent to Valkey directly): lockproxy runs a function only under its monitor; load the library again through lockproxy with FUNCTION LOAD REPLACE (function %q)", fn)
}

// errRestoreUnread: a FUNCTION RESTORE payload with a right checksum that
// lockproxy cannot read, so cannot put its monitor into.
const errRestoreUnread = "ERR lockproxy refused FUNCTION RESTORE: its payload has a right checksum but is not one lockproxy can read (libraries' code as FUNCTION DUMP writes it), so it cannot put its monitor into the libraries; load each library with FUNCTION LOAD through lockproxy"

// errUnsupported: a command on a protected key that lockproxy does not
// understand exactly as Valkey would, refused rather than forwarded. r is
// the rule of the key (nil: a guarded key or one of lockproxy's own).
func errUnsupported(cmd string, key []byte, r *policy.Rule, what, todo string) string {
	on := "lock key " + quoteKey(key)
	if r != nil {
		on += " (" + ruleName(r) + ")"
	} else {
		on = quoteKey(key) + ", a key lockproxy protects"
	}
	return "UNSUPPORTED lockproxy does not understand " + cmd + " on " + on + " as Valkey would, so it refuses it rather than forward it unchecked: " + what + "; " + todo
}

// errRestoreChecksum is Valkey's answer to a FUNCTION RESTORE payload whose
// checksum is wrong, given by lockproxy for one it cannot read either.
const errRestoreChecksum = "ERR DUMP payload version or checksum are wrong"

// errCrossDB: COPY ... DB, MOVE or MIGRATE of a lock or a guarded key.
// r is the lock key's rule, nil for a guarded key.
func errCrossDB(cmd string, key []byte, r *policy.Rule) string {
	what := ", a key a lock guards"
	if r != nil {
		what = " (lock key, " + ruleName(r) + ")"
	}
	return fmt.Sprintf("LOCKED lockproxy refused %s on %s%s: it would move a lock or a key a lock guards to another database or server, where lockproxy cannot check who holds the lock (its owner records and fence are this database's); write the key in the other database itself, through lockproxy, holding that database's lock", cmd, quoteKey(key), what)
}

// errKeysUnknown: a write whose keys only Valkey can list (SORT ... STORE,
// MIGRATE ... KEYS) when Valkey did not list them.
func errKeysUnknown(cmd, why string) string {
	if len(why) > 200 {
		why = why[:200] + "..."
	}
	return fmt.Sprintf("UNSUPPORTED lockproxy refused %s: only Valkey can list the keys it writes, and asking it (COMMAND GETKEYSANDFLAGS) failed (%s), so lockproxy cannot tell whether it writes a lock; retry, and allow lockproxy's upstream user +command if the failure was NOPERM", cmd, strings.ReplaceAll(strings.ReplaceAll(why, "\r", " "), "\n", " "))
}

// errGatedScript: a script's or function's call of a command that
// reconfigures Valkey (commands.Table.Gated), under admin_commands admin
// or refuse. cmd is the call's command and subcommand (the monitor puts
// them in at run time). Code word NOADMIN, as the proxy's refusal of the
// plain command.
func errGatedScript(cmd string) string {
	return "NOADMIN lockproxy refused " + cmd + " inside a script: it reconfigures Valkey, which a script or function run through lockproxy may not do (admin_commands); send it as a plain command after LOCKPROXY AUTH as an admin with role operate (admin_commands: admin), or to Valkey directly as its administrator"
}
