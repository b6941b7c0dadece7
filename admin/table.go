package admin

import (
	"strings"

	"github.com/lockproxy/lockproxy/resp"
	"github.com/lockproxy/lockproxy/telemetry"
)

// The LOCKPROXY command family, answered by the proxy itself and never
// forwarded. Replies are built for valkey-cli: a record is a map (RESP3) or
// a flat array of field names and values, all strings (RESP2), as Valkey's
// own CONFIG GET and XINFO do; a list of records is an array of them.

// Cmd is one LOCKPROXY subcommand.
type Cmd struct {
	Name string
	args string // usage after the subcommand
	min  int    // arguments after the subcommand
	max  int    // -1: any number
	// Open: never needs LOCKPROXY AUTH. Private: needs it even when
	// read-only access is open. Operate: needs a login with role operate
	// (role read is not enough).
	Open, Private, Operate bool
	// Table: reads Valkey's command table, which may have to be fetched
	// first. Valkey: reads Valkey (lock records), so it runs off the event
	// loop. The caller arranges both (and, for the others, that every
	// reply the connection is owed came first).
	Table, Valkey bool
	run           func(a *Admin, c Conn, args [][]byte) []byte
	help          []string
}

var cmds []*Cmd

func init() {
	cmds = []*Cmd{
		{Name: "AUDIT", args: "[COUNT <n>] [KEY <pattern>] [OUTCOME <name>]", max: 6, run: (*Admin).audit,
			help: []string{"Recent lock events, newest first (COUNT default 10). KEY filters by glob,",
				"OUTCOME by one of: " + outcomeList() + "."}},
		{Name: "AUTH", args: "[<user>] <password>", min: 1, max: 2, Open: true, run: (*Admin).auth,
			help: []string{"Log this connection in to the admin commands as a user of admin.users;",
				"without <user>, as \"default\" (admin.password)."}},
		{Name: "CHECK", args: "<key>", min: 1, max: 1, Table: true, run: (*Admin).check,
			help: []string{"Which lock rule matches <key>, and what DEL, PEXPIRE, SET and a write of a",
				"guarded key would do, from the lock's holder and from any other client."}},
		{Name: "CONFIG", max: 0, Private: true, run: (*Admin).config,
			help: []string{"The configuration in force, secrets redacted."}},
		{Name: "FENCE", args: "<lock-key>", min: 1, max: 1, Open: true, Valkey: true, run: (*Admin).fence,
			help: []string{"This connection's fencing token (grant number) for <lock-key>, or nil when",
				"it holds no grant of it. Needs no AUTH: it only tells a client its own token."}},
		{Name: "HELP", max: 0, Open: true, run: (*Admin).help,
			help: []string{"Print this help."}},
		{Name: "LOCKS", args: "[<pattern>]", max: 1, Valkey: true, run: (*Admin).locks,
			help: []string{"Locks of the current database whose lease is running, as Valkey records them",
				"(granted through any lockproxy instance): key, rule, holder, grant, acquired",
				"at, lease, the remaining TTL, and whether the grant is still current. Read",
				"from the locks' index lockproxy keeps in Valkey, not by SCAN."}},
		{Name: "REINDEX", max: 0, Operate: true, Valkey: true, run: (*Admin).reindex,
			help: []string{"Find the lock records of the current database with SCAN and list them in the",
				"locks' index LOCKS and STATS read: after a rolling upgrade from a lockproxy",
				"without the index, once the older instances are gone."}},
		{Name: "RELOAD", max: 0, Private: true, Operate: true, run: (*Admin).reload,
			help: []string{"Read the configuration file again; apply its lock rules to the next command",
				"of every connection, or keep the running configuration and name the bad line."}},
		{Name: "SESSIONS", max: 0, Valkey: true, run: (*Admin).sessions,
			help: []string{"Client connections, their lock owners and the locks they hold."}},
		{Name: "SLOWLOG", args: "[GET [<count>] | LEN | RESET]", max: 2, run: (*Admin).slowlog,
			help: []string{"Commands whose reply took at least slowlog.threshold, newest first (GET: 10,",
				"-1 for all kept), as Valkey's SLOWLOG shapes them: id, time, microseconds, the",
				"command's name with keys=, args=, client_id= and error= (never its values),",
				"client address, client name. RESET (role operate) empties it."}},
		{Name: "STATS", max: 0, Valkey: true, run: (*Admin).stats,
			help: []string{"Counters since start: grants, contention, token-checked releases, refusals,",
				"successor deletions prevented and observed, lapsed leases, hold and wait times."}},
	}
}

func outcomeList() string {
	names := make([]string, len(telemetry.AllOutcomes))
	for i, o := range telemetry.AllOutcomes {
		names[i] = string(o)
	}
	return strings.Join(names, ", ")
}

// Find returns the subcommand named name, in any letter case; nil when
// there is none.
func Find(name []byte) *Cmd {
	for _, c := range cmds {
		if strings.EqualFold(c.Name, string(name)) {
			return c
		}
	}
	return nil
}

// Refusal is the error text for LOCKPROXY without a subcommand, with an
// unknown one, or with the wrong number of arguments; "" when args (the
// whole command, LOCKPROXY first) name c with an accepted number of them.
// c is Find(args[1]).
func Refusal(c *Cmd, args [][]byte) string {
	switch {
	case len(args) < 2:
		return errWrongArgs("lockproxy")
	case c == nil:
		return errUnknown(string(args[1]))
	}
	if n := len(args) - 2; n < c.min || (c.max >= 0 && n > c.max) {
		return errWrongArgs("lockproxy|" + strings.ToLower(c.Name))
	}
	return ""
}

// DeniedCmd is the error text when connection id may not run c, or "".
func (a *Admin) DeniedCmd(c *Cmd, id uint64) string {
	if c.Open {
		return ""
	}
	return a.Denied(id, "LOCKPROXY "+c.Name, c.Private, c.Operate)
}

// Run answers c for connection conn; args are those after the subcommand.
// It returns the whole reply.
func (a *Admin) Run(c *Cmd, conn Conn, args [][]byte) []byte { return c.run(a, conn, args) }

// InMulti is the reply LOCKPROXY gets inside MULTI, where the proxy cannot
// answer in place of a queued command (the proxy makes Valkey abort the
// transaction, as it does for a command it cannot queue).
func InMulti() []byte { return resp.AppendError(nil, errInMulti) }

func (a *Admin) help(c Conn, _ [][]byte) []byte {
	lines := []string{"LOCKPROXY <subcommand> [<arg> ...]. Subcommands are:"}
	for _, c := range cmds {
		lines = append(lines, strings.TrimSpace(c.Name+" "+c.args))
		for _, h := range c.help {
			lines = append(lines, "    "+h)
		}
	}
	switch l := a.logins.Load(); {
	case l.named:
		lines = append(lines, "Admin users are set: LOCKPROXY AUTH <user> <password> first (HELP and FENCE need none).")
	case !l.Open():
		lines = append(lines, "An admin password is set: LOCKPROXY AUTH <password> first (HELP and FENCE need none).")
	}
	out := resp.AppendArrayHeader(nil, len(lines))
	for _, l := range lines {
		out = resp.AppendSimple(out, l)
	}
	return out
}
