package admin

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/lockproxy/lockproxy/config"
)

// Every error reply the admin commands write, in one place (the proxy's
// own are in proxy/errors.go). Each one follows the RESP convention: one
// upper-case code word, then a sentence that says what happened and what
// to do.

const (
	errInMulti       = "ERR LOCKPROXY is answered by lockproxy itself and cannot run inside MULTI; send it outside the transaction"
	errNoPassword    = "ERR LOCKPROXY AUTH called, but no admin password or users are configured (admin.password, admin.users); every LOCKPROXY subcommand is open"
	errWrongPass     = "WRONGPASS invalid lockproxy admin password; LOCKPROXY AUTH takes admin.password from the lockproxy config"
	errWrongUserPass = "WRONGPASS invalid lockproxy admin user or password; LOCKPROXY AUTH <user> <password> takes a user of admin.users in the lockproxy config"
)

// errWrongArgs is Valkey's text, so clients that match on it keep working.
func errWrongArgs(cmd string) string {
	return fmt.Sprintf("ERR wrong number of arguments for '%s' command", cmd)
}

func errUnknown(sub string) string {
	return fmt.Sprintf("ERR unknown subcommand '%s'. Try LOCKPROXY HELP.", clip(sub, 64))
}

// errNoAuth: what (LOCKPROXY STATS, INFO lockproxy) needs a login; named
// says whether admin.users is set, so the message shows the AUTH form that
// works.
func errNoAuth(what string, named bool) string {
	if named {
		return fmt.Sprintf("NOAUTH %s requires LOCKPROXY AUTH <user> <password> first (admin.users is set in the lockproxy config)", what)
	}
	return fmt.Sprintf("NOAUTH %s requires LOCKPROXY AUTH <password> first (admin.password is set in the lockproxy config)", what)
}

// errNoCredentials: no admin credentials are configured, and the proxy
// listens where other machines reach it.
func errNoCredentials(what, listen string) string {
	return fmt.Sprintf("NOAUTH %s needs an admin login, and none is configured: lockproxy listens on %s, which is not loopback; set admin.password or admin.users in the lockproxy config (admin.open_read: true opens the read-only subcommands)", what, listen)
}

func errNoPerm(what, user string, role config.AdminRole) string {
	return fmt.Sprintf("NOPERM %s needs an admin user with role operate; %q has role %s: log in as an operate user of admin.users", what, user, role)
}

func errAuthLimit(addr string, limit int, window, wait time.Duration) string {
	return fmt.Sprintf("AUTHLIMIT lockproxy refused LOCKPROXY AUTH from %s unchecked: %d failed logins within %s; try again in %s",
		addr, limit, window, (wait + time.Second - 1).Truncate(time.Second))
}

// The metrics endpoint's admin pages (httpadmin.go), as HTTP bodies.

func errHTTPNoCredentials(what string) string {
	return fmt.Sprintf("NOAUTH %s needs an admin login, and none is configured: set admin.password or admin.users in the lockproxy config", what)
}

func errHTTPNoAuth(what string) string {
	return fmt.Sprintf("NOAUTH %s needs HTTP basic credentials of an admin login: user \"default\" with admin.password, or a user of admin.users", what)
}

func errHTTPWrongPass(what string) string {
	return fmt.Sprintf("WRONGPASS invalid admin user or password for %s; give a user of admin.users, or \"default\" with admin.password", what)
}

// Errors of LOCKPROXY SLOWLOG.

const errSlowlogCount = "ERR LOCKPROXY SLOWLOG GET takes a count of -1 (every entry kept) or more, e.g. LOCKPROXY SLOWLOG GET 10"

func errSlowlogSub(sub string) string {
	return fmt.Sprintf("ERR unknown LOCKPROXY SLOWLOG subcommand '%s'; use GET [<count>], LEN or RESET", clip(sub, 64))
}

// Errors of LOCKPROXY AUDIT's options.

const (
	auditUsage    = "LOCKPROXY AUDIT [COUNT <n>] [KEY <pattern>] [OUTCOME <name>]"
	errAuditCount = "ERR COUNT must be a positive integer"
)

func errAuditNoValue(opt string) string {
	return "ERR syntax error: " + opt + " needs a value; " + auditUsage
}

func errAuditOption(opt string) string {
	return "ERR syntax error: unknown option '" + opt + "'; " + auditUsage
}

func errAuditOutcome(name string) string {
	return "ERR unknown OUTCOME '" + name + "'; outcomes are: " + outcomeList()
}

func errReload(err error) string {
	return "ERR lockproxy reload failed; the running configuration stays: " + OneLine(err)
}

// errUpstream: reading the lock records failed (LOCKS, SESSIONS, FENCE,
// REINDEX).
func errUpstream(err error) string {
	if errors.Is(err, errIndexing) {
		return "INDEXING lockproxy is still listing the lock records written before the locks' index (one SCAN of the keyspace, once, longer than one command may take): run the command again to go on"
	}
	var ie indexError
	if errors.As(err, &ie) && strings.HasPrefix(ie.err.Error(), "NOPERM") {
		return "NOPERM lockproxy may not read or write the locks' index " + ie.key + " in Valkey (" + OneLine(ie.err) + "): give the upstream user the key pattern ~*:lockproxy:index (docs/operations.md, Valkey ACL recipes)"
	}
	return "UPSTREAM lockproxy could not read the lock records from Valkey: " + OneLine(err) + "; check that Valkey is reachable and try again"
}

// indexError is an error Valkey answered for the locks' index key.
type indexError struct {
	key string
	err error
}

func (e indexError) Error() string { return e.key + ": " + e.err.Error() }
func (e indexError) Unwrap() error { return e.err }

// clip shortens what a client sent before it is quoted back.
func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
