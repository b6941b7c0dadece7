package e2e_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/lockproxy/lockproxy/cluster"
	"github.com/lockproxy/lockproxy/config"
	"github.com/lockproxy/lockproxy/internal/valkeytest"
	"github.com/lockproxy/lockproxy/proxy"
)

// The commands that reconfigure Valkey (admin_commands; the list is
// commands.Table.Gated's, from Valkey's "admin" flag), as plain commands
// and from scripts and functions. The proxy's listen address is not
// loopback here, as in the README's recipe; on loopback the gate is the
// same (the loopback-closed case below).

const gateRules = "locks:\n  - pattern: \"v:*\"\n"

// gateOptions: lock rules, lockproxy's upstream user of the README's
// recipe, a listen address that is not loopback, one operate admin.
func gateOptions(t *testing.T, mode config.AdminCommands, pw string) proxy.Options {
	opts := rulesOptions(t, gateRules)
	opts.Upstream.Username, opts.Upstream.Password = "lockproxy", pw
	opts.Listen = "0.0.0.0:6380"
	opts.Admin.Users = []config.AdminUser{{Name: "ops", Password: "ops-pw", Role: config.AdminOperate}}
	opts.AdminCommands = mode
	if mode == "" {
		// What a configuration file without admin_commands means
		// (config.Parse's default; the harness forwards an unset one).
		cfg, err := config.Parse("default", []byte("listen: 127.0.0.1:6380\n"))
		if err != nil {
			t.Fatal(err)
		}
		opts.AdminCommands = cfg.AdminCommands
	}
	return opts
}

// TestAdminCommandsRecipe: the README's "clients reach Valkey only through
// lockproxy" holds end to end. Under the default (admin), an anonymous
// client of lockproxy cannot reopen Valkey with ACL SETUSER, change its
// configuration or read its users' password hashes, inside MULTI neither,
// and a direct connection still cannot DEL the lock; an operate admin can;
// under refuse nobody can; under forward everybody can, as before the
// gate.
//
// On 9ae0d55 the anonymous ACL SETUSER answered OK and the direct DEL
// then removed the lock.
func TestAdminCommandsRecipe(t *testing.T) {
	const pw = "lockproxy-test-secret"
	recipe := aclRecipes(t, "../README.md")["only-through-lockproxy"]
	if len(recipe) == 0 {
		t.Fatal("the README's only-through-lockproxy recipe is not found")
	}
	reopen := []string{"ACL", "SETUSER", "default", "on", "nopass", "~*", "&*", "+@all"}
	for _, mode := range []config.AdminCommands{"", config.AdminCommandsAdmin, config.AdminCommandsRefuse, config.AdminCommandsForward} {
		name := string(mode)
		if name == "" {
			name = "default"
		}
		t.Run(name, func(t *testing.T) {
			srv := valkeytest.Start(t)
			applyRecipe(t, srv.Addr, recipe, pw)
			e := &env{t: t, srv: srv}
			e.startProxy(gateOptions(t, mode, pw))
			victim, anon := dialRaw(t, e.addr), dialRaw(t, e.addr)
			eq(t, victim.do("SET", "v:lock", "victimtoken", "NX", "PX", "600000"), "+OK\r\n")

			if mode == config.AdminCommandsForward {
				eq(t, anon.do(reopen...), "+OK\r\n")
				eq(t, dialRaw(t, srv.Addr).do("DEL", "v:lock"), ":1\r\n")
				return
			}
			word := "admin_commands: admin"
			if mode == config.AdminCommandsRefuse {
				word = "admin_commands: refuse"
			}
			for _, c := range [][]string{reopen, {"acl", "setuser", "default", "on", "nopass", "+@all"}, {"CONFIG", "SET", "maxmemory", "1"},
				{"Config", "Get", "requirepass"}, {"ACL", "LIST"}, {"ACL", "GETUSER", "lockproxy"}, {"ACL", "LOG", "RESET"},
				{"REPLICAOF", "127.0.0.1", "1"}, {"CLUSTER", "MEET", "127.0.0.1", "1"}, {"DEBUG", "SLEEP", "0"}, {"SHUTDOWN", "NOSAVE"}} {
				got := anon.do(c...)
				mustContain(t, got, "-NOADMIN lockproxy refused "+strings.ToUpper(c[0]))
				mustContain(t, got, word)
			}
			// Queued in a transaction: refused, and EXEC aborts.
			eq(t, anon.do("MULTI"), "+OK\r\n")
			mustContain(t, anon.do(reopen...), "-NOADMIN lockproxy refused ACL SETUSER")
			mustContain(t, anon.do("EXEC"), "-EXECABORT")
			// What does not reconfigure Valkey passes.
			mustContain(t, anon.do("ACL", "WHOAMI"), "lockproxy")
			mustContain(t, anon.do("ACL", "LOG"), "*")
			mustContain(t, anon.do("INFO", "server"), "redis_version")
			mustContain(t, anon.do("SLOWLOG", "GET"), "*")
			eq(t, anon.do("CLIENT", "NO-EVICT", "on"), "+OK\r\n") // lockproxy's own answer
			mustContain(t, anon.do("CLIENT", "PAUSE", "10"), "-NOADMIN lockproxy refused CLIENT PAUSE")
			// The recipe holds: a direct connection can do nothing.
			mustContain(t, dialRaw(t, srv.Addr).do("DEL", "v:lock"), "-NOPERM")
			eq(t, victim.do("GET", "v:lock"), bulk("victimtoken"))

			ops := dialRaw(t, e.addr)
			eq(t, ops.do("LOCKPROXY", "AUTH", "ops", "ops-pw"), "+OK\r\n")
			probe := []string{"ACL", "SETUSER", "probe", "off"}
			if mode == config.AdminCommandsRefuse {
				mustContain(t, ops.do(probe...), "-NOADMIN lockproxy refused ACL SETUSER")
				return
			}
			eq(t, ops.do(probe...), "+OK\r\n")
			mustContain(t, ops.do("CONFIG", "GET", "maxmemory"), "maxmemory")
			// Logged out, the same connection is refused again.
			eq(t, ops.do("RESET"), "+RESET\r\n")
			mustContain(t, ops.do(probe...), "-NOADMIN")
		})
	}
	// On loopback without admin credentials the LOCKPROXY operate
	// subcommands are open, but the gate is not: whoever can reach
	// lockproxy could reopen Valkey (a sidecar's application, make run's
	// valkey-cli). Nobody may, and the refusal says how to allow it.
	t.Run("loopback-closed", func(t *testing.T) {
		opts := rulesOptions(t, gateRules)
		opts.AdminCommands = config.AdminCommandsAdmin
		e := newEnv(t, opts)
		got := dialRaw(t, e.addr).do("ACL", "SETUSER", "probe", "off")
		mustContain(t, got, "-NOADMIN lockproxy refused ACL SETUSER")
		mustContain(t, got, "admin.users")
		eq(t, dialRaw(t, e.srv.Addr).do("ACL", "GETUSER", "probe"), "$-1\r\n") // no such user
	})
}

// TestAdminCommandsInScripts: inside EVAL and FCALL, a call of a command
// that reconfigures Valkey is refused by the monitor (NOADMIN) before its
// fast path, in any letter case, whether an argument names a lock or not;
// a function of a library loaded through lockproxy refuses it when called
// around lockproxy too. An admin's EVAL reaches Valkey, which answers in
// its own words.
//
// On 9ae0d55 these calls reached Valkey (CLUSTER DELSLOTS, which Valkey
// lets scripts run, among them).
func TestAdminCommandsInScripts(t *testing.T) {
	e := newEnv(t, gateOptions(t, config.AdminCommandsAdmin, ""))
	c := dialRaw(t, e.addr)
	for _, call := range []string{
		"redis.call('CONFIG','SET','maxmemory-policy','allkeys-lru')",
		"redis.call('config','set','maxmemory','1')",
		"redis.call('ACL','SETUSER','default','on','nopass','+@all')",
		"redis.call('Acl','SetUser','x')",
		"redis.call('CLUSTER','DELSLOTS',1)",
		"redis.call('cluster','meet','127.0.0.1','1')",
		"redis.call('REPLICAOF','127.0.0.1','1')",
		"redis.call('acl','log','reset')",
	} {
		word := strings.ToUpper(strings.SplitN(call, "'", 3)[1])
		got := c.do("EVAL", "return "+call, "0")
		mustContain(t, got, "-NOADMIN lockproxy refused "+word)
		mustContain(t, got, "inside a script")
		got = c.do("EVAL", "local ok, e = pcall(function() return "+call+" end) return tostring(ok)", "1", "v:lock")
		eq(t, got, bulk("false"))
		got = c.do("EVAL", "return redis.pcall("+strings.TrimSuffix(strings.TrimPrefix(call, "redis.call("), ")")+")", "0")
		mustContain(t, got, "-NOADMIN lockproxy refused "+word)
	}
	// The monitor remembers each verb's name check: an allowed CLUSTER
	// subcommand first does not let a gated one through after it; verbs
	// that are no string reach Valkey, which answers as it does.
	mustContain(t, c.do("EVAL", "redis.pcall('CLUSTER','KEYSLOT','a') redis.pcall('cluster','help') return redis.call('CLUSTER','DELSLOTS',1)", "0"),
		"-NOADMIN lockproxy refused CLUSTER DELSLOTS")
	for _, verb := range []string{"nil", "0/0", "{}", "1", "true"} {
		body := "local r = redis.pcall(" + verb + ") return type(r) == 'table' and r.err or 'no error'"
		eq(t, c.do("EVAL", body, "0"), dialRaw(t, e.srv.Addr).do("EVAL", body, "0"))
	}
	mustContain(t, c.do("EVAL", "pcall(redis.call, nil) pcall(redis.call, 0/0) pcall(redis.call, {}) return redis.call('Config','Set','x','y')", "0"),
		"-NOADMIN lockproxy refused CONFIG SET")
	// Read-only scripts, which Valkey lets run CLUSTER DELSLOTS (it has
	// no "write" flag): under the gate alone.
	ro := "return redis.call('CLUSTER','DELSLOTS',1)"
	mustContain(t, c.do("EVAL_RO", ro, "0"), "-NOADMIN lockproxy refused CLUSTER DELSLOTS")
	mustContain(t, c.do("EVAL", "#!lua flags=no-writes\n"+ro, "0"), "-NOADMIN lockproxy refused CLUSTER DELSLOTS")
	eq(t, c.do("SCRIPT", "LOAD", ro), bulk(sha1hex(ro)))
	mustContain(t, c.do("EVALSHA_RO", sha1hex(ro), "0"), "-NOADMIN lockproxy refused CLUSTER DELSLOTS")
	eq(t, c.do("SET", "v:k", "x", "NX", "PX", "60000"), "+OK\r\n")
	eq(t, c.do("EVAL_RO", "return redis.call('GET', KEYS[1])", "1", "v:k"), bulk("x"))
	eq(t, c.do("EVALSHA_RO", sha1hex(ro), "0", "a1", "a2"), c.do("EVAL_RO", ro, "0"))
	mustContain(t, c.do("EVAL_RO", "return redis.call('SET', KEYS[1], 'y')", "1", "v:k"), "-ERR Write commands are not allowed from read-only scripts")
	// What does not reconfigure passes the gate: Valkey answers.
	mustContain(t, c.do("EVAL", "return redis.call('CLUSTER','KEYSLOT','a')", "0"), "-ERR This instance has cluster support disabled")
	eq(t, c.do("EVAL", "return redis.call('CONFIG','HELP')[1] ~= nil", "0"), ":1\r\n")

	lib := "#!lua name=gate\n" +
		"redis.register_function('cfg', function(keys, args) return redis.call('CONFIG', 'SET', 'maxmemory', '1') end)\n" +
		"redis.register_function('slots', function(keys, args) return redis.call('Cluster', 'DelSlots', 1) end)\n" +
		"redis.register_function{function_name = 'ro', callback = function(keys, args) return redis.call('CLUSTER', 'DELSLOTS', 1) end, flags = {'no-writes'}}"
	eq(t, c.do("FUNCTION", "LOAD", lib), bulk("gate"))
	mustContain(t, c.do("FCALL", "cfg", "0"), "-NOADMIN lockproxy refused CONFIG SET")
	mustContain(t, c.do("FCALL", "slots", "0"), "-NOADMIN lockproxy refused CLUSTER DELSLOTS")
	mustContain(t, c.do("FCALL_RO", "ro", "0"), "-NOADMIN lockproxy refused CLUSTER DELSLOTS")
	direct := dialRaw(t, e.srv.Addr)
	mustContain(t, direct.do("FCALL_RO", "ro", "0"), "-NOADMIN lockproxy refused CLUSTER DELSLOTS")
	mustContain(t, direct.do("FCALL", "cfg", "0"), "-NOADMIN lockproxy refused CONFIG SET")
	mustContain(t, direct.do("FCALL", "slots", "0"), "-NOADMIN lockproxy refused CLUSTER DELSLOTS")
	mustContain(t, direct.do("FCALL", "slots__lockproxy", "0"), "-NOADMIN lockproxy refused CLUSTER DELSLOTS")

	// An operate admin's EVAL runs without the gate: Valkey's own answer.
	ops := dialRaw(t, e.addr)
	eq(t, ops.do("LOCKPROXY", "AUTH", "ops", "ops-pw"), "+OK\r\n")
	got := ops.do("EVAL", "return redis.call('CLUSTER','DELSLOTS',1)", "0")
	if strings.Contains(got, "NOADMIN") || !strings.HasPrefix(got, "-") {
		t.Errorf("an admin's CLUSTER DELSLOTS on a standalone Valkey: %q", got)
	}
}

// TestAdminCommandsClusterScript is finding 9 in front of a real cluster:
// a script's CLUSTER DELSLOTS and ADDSLOTS of the slot of a key it names,
// and a script's CLUSTER MEET, are refused, and the slot map stays as it
// was (read straight from a node).
//
// On 9ae0d55 the monitor forwarded both: the slot moved, or the node met.
func TestAdminCommandsClusterScript(t *testing.T) {
	opts := rulesOptions(t, gateRules)
	opts.Listen = "0.0.0.0:6380"
	opts.AdminCommands = config.AdminCommandsAdmin
	e, cl := clusterEnv(t, opts)
	before := slotMap(t, cl)
	slot := strconv.Itoa(int(cluster.Slot([]byte("{w}x"))))
	nodesBefore := nodeCount(t, cl)
	c := dialRaw(t, e.addr)
	got := c.do("EVAL", "redis.call('CLUSTER','DELSLOTS',"+slot+") return redis.call('CLUSTER','ADDSLOTS',"+slot+")", "1", "{w}x")
	mustContain(t, got, "-NOADMIN lockproxy refused CLUSTER DELSLOTS inside a script")
	got = c.do("EVAL", "return redis.call('CLUSTER','MEET','127.0.0.1','1')", "0")
	mustContain(t, got, "-NOADMIN lockproxy refused CLUSTER MEET inside a script")
	got = c.do("EVAL_RO", "return redis.call('CLUSTER','DELSLOTS',"+slot+")", "1", "{w}x")
	mustContain(t, got, "-NOADMIN lockproxy refused CLUSTER DELSLOTS inside a script")
	after := slotMap(t, cl)
	for s := 0; s < 16384; s++ {
		a, _ := before.Primary(uint16(s))
		b, _ := after.Primary(uint16(s))
		if a != b {
			t.Fatalf("slot %d moved from %q to %q", s, a, b)
		}
	}
	eq(t, nodeCount(t, cl), nodesBefore)
	// The cluster face still answers the top-level CLUSTER commands
	// (hidden: as a standalone server).
	eq(t, c.do("CLUSTER", "DELSLOTS", slot), "-ERR This instance has cluster support disabled\r\n")
}

// nodeCount is how many nodes a node of the cluster knows, handshakes
// included.
func nodeCount(t *testing.T, cl *valkeytest.Cluster) int {
	t.Helper()
	out, err := valkeytest.Do(cl.Nodes[0].Addr, "CLUSTER", "NODES")
	if err != nil {
		t.Fatal(err)
	}
	return len(strings.Split(strings.TrimSpace(out), "\n"))
}

// TestAdminCommandsReload: a reload puts a new admin_commands in force for
// the next command of every connection, plain and scripted, and needs no
// restart.
func TestAdminCommandsReload(t *testing.T) {
	const head = "listen: 0.0.0.0:6380\n" + gateRules
	e, path := fileEnv(t, head+"admin_commands: refuse\n")
	c := dialRaw(t, e.addr)
	mustContain(t, c.do("CONFIG", "SET", "maxmemory-policy", "noeviction"), "-NOADMIN lockproxy refused CONFIG SET: it reconfigures Valkey, and admin_commands: refuse")
	writeFile(t, path, head+"admin_commands: forward\n")
	res, err := e.p.Reload()
	if err != nil || len(res.Restart) != 0 {
		t.Fatalf("reload: %v, restart needed for %q", err, res.Restart)
	}
	eq(t, c.do("CONFIG", "SET", "maxmemory-policy", "noeviction"), "+OK\r\n")
	mustContain(t, c.do("EVAL", "return redis.call('CLUSTER','DELSLOTS',1)", "0"), "-ERR This instance has cluster support disabled")
	writeFile(t, path, head)
	if _, err := e.p.Reload(); err != nil {
		t.Fatal(err)
	}
	mustContain(t, c.do("CONFIG", "SET", "maxmemory-policy", "noeviction"), "admin_commands: admin")
	mustContain(t, c.do("EVAL", "return redis.call('CLUSTER','DELSLOTS',1)", "0"), "-NOADMIN")
}
