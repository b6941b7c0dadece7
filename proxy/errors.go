package proxy

import (
	"fmt"
	"time"

	"github.com/lockproxy/lockproxy/admin"
)

// Every error reply the proxy itself writes, in one place. Each one follows
// the RESP convention: one upper-case code word, then a sentence that says
// what happened and what to do. Errors Valkey writes are forwarded untouched.

const (
	// Same text as Valkey, so clients that match on it keep working.
	errMaxClients  = "ERR max number of clients reached"
	errNoAuth      = "NOAUTH Authentication required."
	errHelloNoAuth = "NOAUTH HELLO must be called with the client already authenticated, " +
		"otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate " +
		"the client and select the RESP protocol version at the same time"
	// CLIENT NO-EVICT and NO-TOUCH's argument (CLIENT LIST's and KILL's
	// errors are package clients').
	errSyntax = "ERR syntax error"
)

func errProtocol(msg string) string { return "ERR " + msg }

func errWrongArgs(cmd string) string {
	return fmt.Sprintf("ERR wrong number of arguments for '%s' command", cmd)
}

// errUpstreamDial is the reply when lockproxy cannot reach Valkey at all.
func errUpstreamDial(addr string, err error) string {
	return fmt.Sprintf("UPSTREAM lockproxy cannot reach Valkey at %s (%v); retry later or check the upstream address in the lockproxy config", addr, err)
}

// errUpstreamSlow is the reply when Valkey accepted a new connection but did
// not answer it: alive, and busy with something long.
func errUpstreamSlow(addr string, wait time.Duration) string {
	return fmt.Sprintf("UPSTREAM Valkey at %s accepted lockproxy's connection but did not answer within %s (busy with a long command such as SAVE or DEBUG SLEEP, or a busy script); retry later", addr, wait)
}

// errUpstreamLost is the reply for each command that was in flight when the
// upstream connection broke: Valkey may or may not have run it.
func errUpstreamLost(addr string, err error) string {
	return fmt.Sprintf("UPSTREAM lockproxy lost its connection to Valkey at %s (%v) before the reply came; the command may or may not have run, so retry only if it is safe to", addr, err)
}

// errDedicatedLost: a session with its own upstream connection (MULTI,
// SUBSCRIBE, AUTH as another user, ...) cannot be moved silently to a new one,
// because the state on the old one is gone.
func errDedicatedLost(addr string, err error) string {
	return fmt.Sprintf("UPSTREAM lockproxy lost this client's own connection to Valkey at %s (%v); its transaction, subscriptions and login are gone, so reconnect and start again", addr, err)
}

func errNoCommandTable(addr string, err error) string {
	why := ""
	if err != nil {
		why = " (" + err.Error() + ")"
	}
	return fmt.Sprintf("UPSTREAM lockproxy has not yet read the command table of Valkey at %s%s, so it cannot tell which keys this command touches; retry when Valkey is reachable", addr, why)
}

// errStreamLock: on a connection in subscribe/monitor mode replies no longer
// pair with commands, so the proxy cannot shape a script's reply there.
const errStreamLock = "LOCKED lockproxy cannot run a lock command on a connection that is subscribed or monitoring; use another connection for locks"

// errScriptFlushed: a SCRIPT FLUSH removed lockproxy's script while a lock
// command was in flight with more of the client's commands behind it;
// sending it again would run it after them.
const errScriptFlushed = "UPSTREAM lockproxy's lock script was flushed from Valkey (SCRIPT FLUSH) while this command was in flight; it did not run: retry it"

// clip shortens what a client sent before it is quoted back.
func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// Errors in front of a cluster (cluster*.go). Package cluster words none
// of its own: its View is given errUpstreamLost, errClusterNoMap,
// errClusterDown, errClusterRedirects and errClusterOwnMoved (cluster.go).

const (
	// Same text as Valkey, so clients that match on it keep working.
	errCrossSlot       = "CROSSSLOT Keys in request don't hash to the same slot"
	errClusterSelect   = "ERR SELECT is not allowed in cluster mode"
	errClusterDisabled = "ERR This instance has cluster support disabled"
	errClusterBadSlot  = "ERR Invalid or out of range slot"

	errClusterMultiSlot = "CROSSSLOT this transaction's keys are on more than one cluster node (lockproxy keeps a transaction on the node of its first key); put the keys of one transaction in one slot with a hash tag, e.g. {user1}:a and {user1}:b"
)

func errClusterCrossSlotLock(cmd, key string) string {
	return fmt.Sprintf("CROSSSLOT %s touches the lock or guarded key %q and keys in other hash slots; lockproxy splits only commands without lock keys: send it once per slot, or put the keys in one slot with a hash tag", cmd, clip(key, 64))
}

func errClusterLockSlot(lock, other string) string {
	return fmt.Sprintf("CROSSSLOT lockproxy's script for %q needs %q, which is in another hash slot, so a cluster cannot run them together; give the lock a hash tag (e.g. {name}:lock) and keep its fence guards in the same tag", clip(lock, 64), clip(other, 64))
}

func errClusterDown(slot uint16) string {
	return fmt.Sprintf("CLUSTERDOWN no primary serves hash slot %d now (a failover or resharding in progress, or the cluster is down); lockproxy did not run the command: retry later", slot)
}

func errClusterNoMap(err error) string {
	why := ""
	if err != nil {
		why = " (" + admin.OneLine(err) + ")"
	}
	return "CLUSTERDOWN lockproxy has not read the cluster's slot map yet" + why + "; check upstream.cluster.seeds and retry when the nodes are reachable"
}

func errClusterRedirects(n int) string {
	return fmt.Sprintf("TRYAGAIN lockproxy followed %d cluster redirects for this command without reaching the slot's primary (the slot is moving); retry it", n)
}

// errClusterOwnMoved: on a connection of the client's own (a transaction,
// a blocking wait, an AUTH sent on it) a redirect is not followed: the state
// there would not come along.
func errClusterOwnMoved(to string) string {
	return fmt.Sprintf("TRYAGAIN this command's hash slot moved to the cluster node at %s while it ran on this client's own connection (MULTI, WATCH, a blocking command or an AUTH sent on it), which lockproxy does not move; the command did not run: retry it", to)
}

func errClusterOwnConn(own, node string) string {
	if node == "" {
		return fmt.Sprintf("CROSSSLOT this client's own connection (after MULTI, WATCH, SUBSCRIBE, or an AUTH while it was open) is to the cluster node at %s, and lockproxy runs its commands only there; use another connection for keys on other nodes", own)
	}
	return fmt.Sprintf("CROSSSLOT this client's own connection (after WATCH, SUBSCRIBE, or an AUTH while it was open) is to the cluster node at %s, but this key is served by %s; use another connection for it", own, node)
}

// errClusterScanCursor: a SCAN cursor that names no primary (made up, or
// from before the cluster lost primaries), or a node's cursor too large to
// carry the node's place beside it.
const errClusterScanCursor = "ERR invalid cursor: lockproxy's SCAN cursors name a cluster primary in their low 8 bits, and this one names none (or its node's cursor is too large); start the scan again from 0"

func errClusterUnknownSub(sub string) string {
	return fmt.Sprintf("ERR unknown subcommand '%s'. Try CLUSTER HELP.", clip(sub, 128))
}

func errClusterFaceOnly(sub string) string {
	return fmt.Sprintf("ERR lockproxy answers CLUSTER SLOTS, SHARDS, NODES, INFO, MYID, MYSHARDID, KEYSLOT, COUNTKEYSINSLOT and GETKEYSINSLOT as one node (cluster_face: single_node); CLUSTER %s is for the cluster's nodes: run it on them directly", clip(sub, 32))
}

// errWaitUnprimed: the write that makes a WAIT count the session's writes
// (wait.go) was refused, so Valkey's count would leave them out.
func errWaitUnprimed(key, why string) string {
	return fmt.Sprintf("ERR lockproxy could not make WAIT count this client's writes: Valkey refused the write of %s that comes first (%s), and WAIT would have counted none of them; allow this user to write keys matching *:lockproxy:wait", key, why)
}

// errGated: a command that reconfigures Valkey (commands.Table.Gated),
// refused under admin_commands admin (the client is no admin of
// lockproxy's with role operate) or refuse. Code word NOADMIN, lockproxy's
// own (Valkey's NOPERM is about the upstream user's ACL).
func errGated(cmd string, refuse bool) string {
	if refuse {
		return "NOADMIN lockproxy refused " + cmd + ": it reconfigures Valkey, and admin_commands: refuse lets no client of lockproxy run it; send it to Valkey directly as its administrator, or change admin_commands in the lockproxy config"
	}
	return "NOADMIN lockproxy refused " + cmd + ": it reconfigures Valkey, and admin_commands: admin lets only a client logged in to lockproxy as an admin with role operate run it; send LOCKPROXY AUTH with such an admin's credentials first (admin.users or admin.password), or send it to Valkey directly as its administrator"
}
