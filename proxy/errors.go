package proxy

import (
	"fmt"
	"time"

	"github.com/lockproxy/lockproxy/policy"
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
	errClientName = "ERR Client names cannot contain spaces, newlines or special characters."
	// CLIENT LIST and CLIENT KILL, answered by the proxy about its clients.
	errSyntax       = "ERR syntax error"
	errClientID     = "ERR Invalid client ID"
	errClientIDKill = "ERR client-id should be greater than 0"
	errNoSuchClient = "ERR No such client"
	errMaxAge       = "ERR maxage is not an integer or out of range"
)

func errClientType(t string) string { return fmt.Sprintf("ERR Unknown client type '%s'", t) }

func errProtocol(msg string) string { return "ERR " + msg }

func errWrongArgs(cmd string) string {
	return fmt.Sprintf("ERR wrong number of arguments for '%s' command", cmd)
}

func errSetinfoOption(opt string) string {
	return fmt.Sprintf("ERR Unrecognized option '%s'", opt)
}

func errSetinfoValue(attr string) string {
	return fmt.Sprintf("ERR %s cannot contain spaces, newlines or special characters.", attr)
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

func errAdminUpstream(err error) string {
	return "UPSTREAM lockproxy could not read the lock records from Valkey: " + oneLine(err) + "; check that Valkey is reachable and try again"
}

// Errors of the admin commands (LOCKPROXY ..., INFO lockproxy).

const (
	errAdminInMulti       = "ERR LOCKPROXY is answered by lockproxy itself and cannot run inside MULTI; send it outside the transaction"
	errAdminNoPassword    = "ERR LOCKPROXY AUTH called, but no admin password or users are configured (admin.password, admin.users); every LOCKPROXY subcommand is open"
	errAdminWrongPass     = "WRONGPASS invalid lockproxy admin password; LOCKPROXY AUTH takes admin.password from the lockproxy config"
	errAdminWrongUserPass = "WRONGPASS invalid lockproxy admin user or password; LOCKPROXY AUTH <user> <password> takes a user of admin.users in the lockproxy config"
)

func errAdminUnknown(sub string) string {
	return fmt.Sprintf("ERR unknown subcommand '%s'. Try LOCKPROXY HELP.", clip(sub, 64))
}

// errAdminNoAuth: what (LOCKPROXY STATS, INFO lockproxy) needs a login;
// named says whether admin.users is set, so the message shows the AUTH
// form that works.
func errAdminNoAuth(what string, named bool) string {
	if named {
		return fmt.Sprintf("NOAUTH %s requires LOCKPROXY AUTH <user> <password> first (admin.users is set in the lockproxy config)", what)
	}
	return fmt.Sprintf("NOAUTH %s requires LOCKPROXY AUTH <password> first (admin.password is set in the lockproxy config)", what)
}

func errAdminNoPerm(what, user string, role policy.AdminRole) string {
	return fmt.Sprintf("NOPERM %s needs an admin user with role operate; %q has role %s: log in as an operate user of admin.users", what, user, role)
}

func errAdminAuthLimit(addr string, wait time.Duration) string {
	return fmt.Sprintf("AUTHLIMIT lockproxy refused LOCKPROXY AUTH from %s unchecked: %d failed logins within %s; try again in %s",
		addr, authFailLimit, authFailWindow, (wait + time.Second - 1).Truncate(time.Second))
}

func errReload(err error) string {
	return "ERR lockproxy reload failed; the running configuration stays: " + oneLine(err)
}

// clip shortens what a client sent before it is quoted back.
func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
