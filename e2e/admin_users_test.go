package e2e_test

import (
	"net"
	"strings"
	"testing"
	"time"
)

// oncallSHA is sha256("0nc4ll"), as `printf %s 0nc4ll | sha256sum` prints it.
const oncallSHA = "b428cf4d1139450e9d89e31af0721625f90d3362b14787cc11acbcdd953a0f7b"

const usersConfig = "admin:\n  password: s3cret\n  users:\n" +
	"    - {name: viewer, password: v1ew, role: read}\n" +
	"    - {name: oncall, password_sha256: " + oncallSHA + ", role: operate}\n" + abRules

// Admin users: read runs every reporting subcommand and INFO lockproxy,
// operate also RELOAD; admin.password is the operate user "default".
func TestAdminUsersRoles(t *testing.T) {
	e, path := fileEnv(t, usersConfig)
	r := dialRaw(t, e.addr)
	mustContain(t, r.do("LOCKPROXY", "HELP"), "Admin users are set: LOCKPROXY AUTH <user> <password> first")
	eq(t, r.do("LOCKPROXY", "FENCE", "x:lock"), "$-1\r\n")
	eq(t, r.do("LOCKPROXY", "STATS"), "-NOAUTH LOCKPROXY STATS requires LOCKPROXY AUTH <user> <password> first (admin.users is set in the lockproxy config)\r\n")
	eq(t, r.do("INFO", "lockproxy"), "-NOAUTH INFO lockproxy requires LOCKPROXY AUTH <user> <password> first (admin.users is set in the lockproxy config)\r\n")
	eq(t, r.do("INFO", "server", "lockproxy")[0], byte('-')) // no section dropped silently
	mustContain(t, r.do("INFO", "server"), "# Server")       // Valkey's INFO stays open
	wrong := "-WRONGPASS invalid lockproxy admin user or password; LOCKPROXY AUTH <user> <password> takes a user of admin.users in the lockproxy config\r\n"
	eq(t, r.do("LOCKPROXY", "AUTH", "viewer", "s3cret"), wrong)
	eq(t, r.do("LOCKPROXY", "AUTH", "nobody", "v1ew"), wrong)
	eq(t, r.do("LOCKPROXY", "AUTH", "oncall", oncallSHA), wrong) // the hash is not the password

	// read
	eq(t, r.do("LOCKPROXY", "AUTH", "viewer", "v1ew"), "+OK\r\n")
	for _, sub := range []string{"STATS", "AUDIT", "LOCKS", "SESSIONS", "CONFIG"} {
		if got := r.do("LOCKPROXY", sub); got[0] != '*' {
			t.Fatalf("%s as a read user: %q", sub, got)
		}
	}
	mustContain(t, r.do("LOCKPROXY", "CHECK", "a:lock"), "*")
	mustContain(t, r.do("INFO", "lockproxy"), "# Lockproxy\r\n")
	mustContain(t, r.do("INFO", "lockproxy"), "admin_auth_failures:3\r\n")
	eq(t, r.do("LOCKPROXY", "RELOAD"), "-NOPERM LOCKPROXY RELOAD needs an admin user with role operate; \"viewer\" has role read: log in as an operate user of admin.users\r\n")
	cfg := r.do("LOCKPROXY", "CONFIG")
	mustContain(t, cfg, "admin.users[0].name\r\n"+bulk("viewer"))
	mustContain(t, cfg, "admin.users[0].password\r\n"+bulk("(redacted)"))
	mustContain(t, cfg, "admin.users[1].password_sha256\r\n"+bulk("(redacted)"))
	mustContain(t, cfg, "admin.users[1].role\r\n"+bulk("operate"))
	if strings.Contains(cfg, "v1ew") || strings.Contains(cfg, oncallSHA) {
		t.Fatal("CONFIG shows a user's password")
	}

	// operate, by hash and by admin.password (the user "default")
	o := dialRaw(t, e.addr)
	eq(t, o.do("LOCKPROXY", "AUTH", "oncall", "0nc4ll"), "+OK\r\n")
	mustContain(t, o.do("LOCKPROXY", "RELOAD"), "reloaded")
	d := dialRaw(t, e.addr)
	eq(t, d.do("LOCKPROXY", "AUTH", "s3cret"), "+OK\r\n")
	mustContain(t, d.do("LOCKPROXY", "RELOAD"), "reloaded")
	eq(t, dialRaw(t, e.addr).do("LOCKPROXY", "AUTH", "default", "s3cret"), "+OK\r\n")
	m := metrics(t, e)
	eq(t, metric(t, m, "lockproxy_admin_auth_failures_total"), 3.0)
	eq(t, metric(t, m, "lockproxy_admin_auth_rate_limited_total"), 0.0)

	// A reload that changes the users logs every admin session out; one
	// that leaves them alone (the two above) does not.
	mustContain(t, r.do("LOCKPROXY", "STATS"), "*")
	writeFile(t, path, strings.Replace(usersConfig, "v1ew", "n3w", 1))
	mustContain(t, o.do("LOCKPROXY", "RELOAD"), "restart_needed\r\n$0\r\n") // admin.users apply live
	mustContain(t, r.do("LOCKPROXY", "STATS"), "-NOAUTH")
	mustContain(t, o.do("LOCKPROXY", "STATS"), "-NOAUTH")
	eq(t, r.do("LOCKPROXY", "AUTH", "viewer", "v1ew"), wrong)
	eq(t, r.do("LOCKPROXY", "AUTH", "viewer", "n3w"), "+OK\r\n")

	// Without users again, INFO lockproxy is open as it was before them.
	writeFile(t, path, "admin:\n  password: s3cret\n"+abRules)
	eq(t, d.do("LOCKPROXY", "AUTH", "s3cret"), "+OK\r\n")
	mustContain(t, d.do("LOCKPROXY", "RELOAD"), "reloaded")
	mustContain(t, dialRaw(t, e.addr).do("INFO", "lockproxy"), "# Lockproxy\r\n")
}

// admin.open_read opens INFO lockproxy with the read-only subcommands.
func TestAdminUsersOpenRead(t *testing.T) {
	e, _ := fileEnv(t, strings.Replace(usersConfig, "admin:\n", "admin:\n  open_read: true\n", 1))
	r := dialRaw(t, e.addr)
	mustContain(t, r.do("INFO", "lockproxy"), "# Lockproxy\r\n")
	mustContain(t, r.do("LOCKPROXY", "STATS"), "*")
	mustContain(t, r.do("LOCKPROXY", "CONFIG"), "-NOAUTH LOCKPROXY CONFIG requires LOCKPROXY AUTH <user> <password>")
	eq(t, r.do("LOCKPROXY", "AUTH", "viewer", "v1ew"), "+OK\r\n")
	mustContain(t, r.do("LOCKPROXY", "CONFIG"), "*")
	mustContain(t, r.do("LOCKPROXY", "RELOAD"), "-NOPERM")
}

// Failed logins are counted per client address: past ten, every attempt
// from that address is refused unchecked, even with the right password, on
// any of its connections; another address is not affected. (The window's
// end is tested with a clock of its own in proxy/authlimit_test.go.)
func TestAdminAuthRateLimit(t *testing.T) {
	e, _ := fileEnv(t, usersConfig)
	a1, a2 := dialRaw(t, e.addr), dialRaw(t, e.addr)
	for i := range 10 {
		c := a1
		if i%2 == 1 {
			c = a2
		}
		mustContain(t, c.do("LOCKPROXY", "AUTH", "oncall", "guess"), "-WRONGPASS")
	}
	limited := "-AUTHLIMIT lockproxy refused LOCKPROXY AUTH from 127.0.0.1 unchecked: 10 failed logins within 1m0s; try again in "
	mustContain(t, a1.do("LOCKPROXY", "AUTH", "oncall", "0nc4ll"), limited)
	mustContain(t, dialRaw(t, e.addr).do("LOCKPROXY", "AUTH", "viewer", "v1ew"), limited)
	mustContain(t, a2.do("LOCKPROXY", "STATS"), "-NOAUTH")

	// From 127.0.0.2 (loopback too), logins are checked.
	nc, err := (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}, Timeout: 2 * time.Second}).Dial("tcp", e.addr)
	if err != nil {
		t.Skipf("cannot dial from 127.0.0.2: %v", err)
	}
	t.Cleanup(func() { nc.Close() })
	b := &raw{t: t, nc: nc}
	eq(t, b.do("LOCKPROXY", "AUTH", "viewer", "v1ew"), "+OK\r\n")
	st := b.do("LOCKPROXY", "STATS")
	mustContain(t, st, "admin_auth_failures\r\n$2\r\n10\r\n")
	mustContain(t, st, "admin_auth_rate_limited\r\n$1\r\n2\r\n")
	m := metrics(t, e)
	eq(t, metric(t, m, "lockproxy_admin_auth_failures_total"), 10.0)
	eq(t, metric(t, m, "lockproxy_admin_auth_rate_limited_total"), 2.0)
}
