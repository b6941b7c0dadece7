package proxy

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/lockproxy/lockproxy/config"
	"github.com/lockproxy/lockproxy/resp"
	"github.com/lockproxy/lockproxy/telemetry"
)

// The LOCKPROXY command family, answered by the proxy itself and never
// forwarded. Replies are built for valkey-cli: a record is a map (RESP3) or
// a flat array of field names and values, all strings (RESP2), as Valkey's
// own CONFIG GET and XINFO do; a list of records is an array of them.

type adminCmd struct {
	name    string
	args    string // usage after the subcommand
	min     int    // arguments after the subcommand
	max     int    // -1: any number
	open    bool   // never needs LOCKPROXY AUTH
	private bool   // needs LOCKPROXY AUTH even when read-only access is open
	operate bool   // needs a login with role operate (role read is not enough)
	table   bool   // reads Valkey's command table, which may have to be fetched
	valkey  bool   // reads Valkey (lock records): runs aside, off the event loop
	run     func(s *session, args [][]byte) []byte
	help    []string
}

var adminCmds []*adminCmd

func init() {
	adminCmds = []*adminCmd{
		{name: "AUDIT", args: "[COUNT <n>] [KEY <pattern>] [OUTCOME <name>]", max: 6, run: (*session).adminAudit,
			help: []string{"Recent lock events, newest first (COUNT default 10). KEY filters by glob,",
				"OUTCOME by one of: " + outcomeList() + "."}},
		{name: "AUTH", args: "[<user>] <password>", min: 1, max: 2, open: true, run: (*session).adminAuth,
			help: []string{"Log this connection in to the admin commands as a user of admin.users;",
				"without <user>, as \"default\" (admin.password)."}},
		{name: "CHECK", args: "<key>", min: 1, max: 1, table: true, run: (*session).adminCheck,
			help: []string{"Which lock rule matches <key>, and what DEL, PEXPIRE, SET and a write of a",
				"guarded key would do, from the lock's holder and from any other client."}},
		{name: "CONFIG", max: 0, private: true, run: (*session).adminConfig,
			help: []string{"The configuration in force, secrets redacted."}},
		{name: "FENCE", args: "<lock-key>", min: 1, max: 1, open: true, valkey: true, run: (*session).adminFence,
			help: []string{"This connection's fencing token (grant number) for <lock-key>, or nil when",
				"it holds no grant of it. Needs no AUTH: it only tells a client its own token."}},
		{name: "HELP", max: 0, open: true, run: (*session).adminHelp,
			help: []string{"Print this help."}},
		{name: "LOCKS", args: "[<pattern>]", max: 1, valkey: true, run: (*session).adminLocks,
			help: []string{"Locks of the current database whose lease is running, as Valkey records them",
				"(granted through any lockproxy instance): key, rule, holder, grant, acquired",
				"at, lease, the remaining TTL, and whether the grant is still current. Read",
				"from the locks' index lockproxy keeps in Valkey, not by SCAN."}},
		{name: "REINDEX", max: 0, operate: true, valkey: true, run: (*session).adminReindex,
			help: []string{"Find the lock records of the current database with SCAN and list them in the",
				"locks' index LOCKS and STATS read: after a rolling upgrade from a lockproxy",
				"without the index, once the older instances are gone."}},
		{name: "RELOAD", max: 0, private: true, operate: true, run: (*session).adminReload,
			help: []string{"Read the configuration file again; apply its lock rules to the next command",
				"of every connection, or keep the running configuration and name the bad line."}},
		{name: "SESSIONS", max: 0, valkey: true, run: (*session).adminSessions,
			help: []string{"Client connections, their lock owners and the locks they hold."}},
		{name: "STATS", max: 0, valkey: true, run: (*session).adminStats,
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

func findAdmin(name []byte) *adminCmd {
	for _, c := range adminCmds {
		if strings.EqualFold(c.name, string(name)) {
			return c
		}
	}
	return nil
}

// admin answers the LOCKPROXY command family from the proxy itself.
func (s *session) admin(cmd resp.Command) {
	args := cmd.Args
	if s.ded != nil && s.inMulti {
		// Inside MULTI the proxy cannot answer in place of a queued
		// command; make Valkey abort the transaction as it does for a
		// command it cannot queue.
		s.queueInMulti(resp.AppendCommandStrings(nil, "LOCKPROXY-REFUSED"),
			func([]byte) []byte { return resp.AppendError(nil, errAdminInMulti) }, nil)
		return
	}
	if len(args) < 2 {
		s.local(resp.AppendError(nil, errWrongArgs("lockproxy")))
		return
	}
	c := findAdmin(args[1])
	if c == nil {
		s.local(resp.AppendError(nil, errAdminUnknown(string(args[1]))))
		return
	}
	if n := len(args) - 2; n < c.min || (c.max >= 0 && n > c.max) {
		s.local(resp.AppendError(nil, errWrongArgs("lockproxy|"+strings.ToLower(c.name))))
		return
	}
	if !c.open {
		if msg := s.adminDenied("LOCKPROXY "+c.name, c.private, c.operate); msg != "" {
			s.local(resp.AppendError(nil, msg))
			return
		}
	}
	if c.table && s.lp != nil && !s.p.tableReady() {
		s.offLoop(func() { s.p.loadTable() })
		return
	}
	// Every reply this client is owed comes first, so the answer sees the
	// effects of its earlier commands (a FENCE right after SET NX).
	if c.valkey {
		// Reading Valkey can take seconds (every record, every primary; a
		// Valkey that does not answer): never on the event loop, whose
		// other clients would wait that long.
		_, sub := cloneArgs(cmd)
		s.aside(func() []byte { return c.run(s, sub[2:]) })
		return
	}
	if !s.settle() {
		return
	}
	s.local(c.run(s, args[2:]))
}

// settle hands over queued commands and waits for their replies, so that
// an answer about them sees their effects. On an event loop, with replies
// owed, it asks for stepSettle instead (asideFirst) and reports false: the
// caller returns, and the command is handled again once they are in.
func (s *session) settle() bool {
	if s.asideFirst() {
		return false
	}
	s.flush()
	if s.ded == nil || !s.ded.Streaming() {
		s.waitDrain(0)
	}
	return true
}

// adminDenied returns the error for running what (a LOCKPROXY subcommand,
// or INFO lockproxy) on this connection, or "" when it may. private: not
// opened by admin.open_read; operate: needs role operate.
func (s *session) adminDenied(what string, private, operate bool) string {
	l := s.p.ops.logins.Load()
	if l.open() {
		// No credentials: open only where no one else can connect.
		if s.p.opts.ListenLoopback() || (s.p.opts.Admin.OpenRead && !private && !operate) {
			return ""
		}
		return errAdminNoCredentials(what, s.p.opts.Listen)
	}
	if v, ok := s.p.ops.authed.Load(s); ok {
		login := v.(adminLogin)
		if operate && login.role != config.AdminOperate {
			return errAdminNoPerm(what, login.user, login.role)
		}
		return ""
	}
	if s.p.opts.Admin.OpenRead && !private {
		return ""
	}
	return errAdminNoAuth(what, l.named)
}

func (s *session) adminHelp([][]byte) []byte {
	lines := []string{"LOCKPROXY <subcommand> [<arg> ...]. Subcommands are:"}
	for _, c := range adminCmds {
		lines = append(lines, strings.TrimSpace(c.name+" "+c.args))
		for _, h := range c.help {
			lines = append(lines, "    "+h)
		}
	}
	switch l := s.p.ops.logins.Load(); {
	case l.named:
		lines = append(lines, "Admin users are set: LOCKPROXY AUTH <user> <password> first (HELP and FENCE need none).")
	case !l.open():
		lines = append(lines, "An admin password is set: LOCKPROXY AUTH <password> first (HELP and FENCE need none).")
	}
	out := resp.AppendArrayHeader(nil, len(lines))
	for _, l := range lines {
		out = resp.AppendSimple(out, l)
	}
	return out
}

// adminAuth logs the connection in. Attempts from a client address that
// failed too often are refused unchecked (see clients.AuthLimiter), so a password
// cannot be guessed faster than clients.AuthFailLimit tries per clients.AuthFailWindow.
func (s *session) adminAuth(args [][]byte) []byte {
	o := s.p.ops
	l := o.logins.Load()
	if l.open() {
		return resp.AppendError(nil, errAdminNoPassword)
	}
	user, pass := config.DefaultAdminUser, args[0]
	if len(args) == 2 {
		user, pass = string(args[0]), args[1]
	}
	if wait := o.authLimit.Blocked(s.host); wait > 0 {
		o.authLimited.Add(1)
		return resp.AppendError(nil, errAdminAuthLimit(s.host, wait))
	}
	role, ok := l.check(user, pass)
	if !ok {
		o.authFailures.Add(1)
		o.authed.Delete(s)
		limited := o.authLimit.Failed(s.host)
		s.p.log.Warn("wrong LOCKPROXY AUTH user or password", "client", s.addr, "client_name", s.nameSnapshot(),
			"user", clip(user, 64), "limit_reached", limited)
		if l.named {
			return resp.AppendError(nil, errAdminWrongUserPass)
		}
		return resp.AppendError(nil, errAdminWrongPass)
	}
	o.authed.Store(s, adminLogin{user: user, role: role})
	return resp.AppendSimple(nil, "OK")
}

func (s *session) adminStats([][]byte) []byte {
	// locks_held is Valkey's: the locks of this database whose key still
	// holds a recorded grant, whichever instance granted them (read from
	// the locks' index, a round trip per 256 locks: STATS only, not INFO
	// or /metrics, which monitoring polls).
	var held any = "unknown"
	if locks, err := s.p.readLocks(s.db, nil); err == nil {
		n := int64(0)
		for i := range locks {
			if locks[i].current {
				n++
			}
		}
		held = n
	}
	return encode(nil, append(s.p.statsFields(), field{"locks_held", held}), s.proto)
}

func (s *session) adminConfig([][]byte) []byte {
	p := s.p
	f := []field{{"config_file", p.opts.ConfigPath}}
	f = append(f, configFields(p.effectiveConfig(), true)...)
	if r := *p.ops.pendingRestart.Load(); len(r) > 0 {
		f = append(f, field{"pending_restart", strings.Join(r, " ")})
	}
	return encode(nil, f, s.proto)
}

func (s *session) adminReload([][]byte) []byte {
	res, err := s.p.Reload()
	if err != nil {
		return resp.AppendError(nil, errReload(err))
	}
	return encode(nil, []field{
		{"status", "reloaded"},
		{"file", res.File},
		{"lock_rules", int64(res.Rules)},
		{"restart_needed", strings.Join(res.Restart, " ")},
	}, s.proto)
}

// field is one entry of a reply record. v is a string, an int64 (a RESP3
// integer, a string in RESP2), nil (null), []field (a nested record),
// [][]field (a list of records) or []string.
type field struct {
	k string
	v any
}

// encode appends a record: a map in RESP3, a flat array in RESP2.
func encode(dst []byte, rec []field, proto int) []byte {
	dst = resp.AppendMapHeader(dst, len(rec), proto)
	for _, f := range rec {
		dst = resp.AppendBulkString(dst, f.k)
		dst = encodeValue(dst, f.v, proto)
	}
	return dst
}

func encodeValue(dst []byte, v any, proto int) []byte {
	switch v := v.(type) {
	case nil:
		return resp.AppendNull(dst, proto)
	case string:
		return resp.AppendBulkString(dst, v)
	case int64:
		if proto >= 3 {
			return resp.AppendInt(dst, v)
		}
		return resp.AppendBulkString(dst, strconv.FormatInt(v, 10))
	case []field:
		return encode(dst, v, proto)
	case [][]field:
		dst = resp.AppendArrayHeader(dst, len(v))
		for _, r := range v {
			dst = encode(dst, r, proto)
		}
		return dst
	case []string:
		dst = resp.AppendArrayHeader(dst, len(v))
		for _, x := range v {
			dst = resp.AppendBulkString(dst, x)
		}
		return dst
	}
	panic(fmt.Sprintf("proxy: cannot encode %T", v))
}
