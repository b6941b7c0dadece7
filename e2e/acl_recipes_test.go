package e2e_test

import (
	"bufio"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/lockproxy/lockproxy/internal/valkeytest"
)

// aclRecipes reads the ACL recipes from the documents, so that what is
// tested is what is written: each "<!-- acl-recipe:NAME -->" is followed by
// a code block of ACL SETUSER lines.
func aclRecipes(t *testing.T, files ...string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		name, in := "", false
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			switch {
			case strings.HasPrefix(line, "<!-- acl-recipe:"):
				name = strings.TrimSuffix(strings.TrimPrefix(line, "<!-- acl-recipe:"), " -->")
			case name != "" && strings.HasPrefix(line, "```"):
				if in {
					name, in = "", false
				} else {
					in = true
				}
			case in && line != "":
				out[name] = append(out[name], line)
			}
		}
		fh.Close()
	}
	return out
}

// applyRecipe runs a recipe's lines on Valkey as its default user (before
// the recipe restricts it), with PASSWORD replaced.
func applyRecipe(t *testing.T, addr string, lines []string, password string) {
	t.Helper()
	for _, l := range lines {
		args := strings.Fields(strings.ReplaceAll(l, ">PASSWORD", ">"+password))
		if r, err := valkeytest.Do(addr, args...); err != nil || strings.TrimSpace(r) != "OK" {
			t.Fatalf("%s: %q %v", l, r, err)
		}
	}
}

// Each documented recipe, built in a real Valkey exactly as written, lets
// lockproxy run its lock rules: check-upstream finds nothing missing, and a
// lock is taken, renewed, fenced, refused to a stranger and released through
// the proxy. With "only through lockproxy", a client that goes to Valkey
// directly can do nothing. A recipe without +command is caught by
// check-upstream (the README's narrow recipe lacked it).
//
// On main the README's recipes were untested and check-upstream did not
// exist.
func TestACLRecipes(t *testing.T) {
	const appRule = "locks:\n  - pattern: \"app:*:lock\"\n"
	recipes := aclRecipes(t, "../README.md", "../docs/operations.md")
	for _, name := range []string{"all-keys", "app-keys", "only-through-lockproxy"} {
		if len(recipes[name]) == 0 {
			t.Fatalf("recipe %s not found in README.md or docs/operations.md", name)
		}
	}
	const pw = "lockproxy-test-secret"
	ctx := context.Background()
	for name, lines := range recipes {
		t.Run(name, func(t *testing.T) {
			srv := valkeytest.Start(t)
			applyRecipe(t, srv.Addr, lines, pw)
			e := &env{t: t, srv: srv}
			opts := rulesOptions(t, appRule)
			opts.Upstream.Username, opts.Upstream.Password = "lockproxy", pw
			e.startProxy(opts)
			for _, c := range e.p.CheckUpstream(ctx) {
				if !c.OK {
					t.Errorf("check-upstream: %s: %s", c.What, c.Detail)
				}
			}
			a, b := dialRaw(t, e.addr), dialRaw(t, e.addr)
			eq(t, a.do("SET", "app:order:lock", "tok-a", "NX", "PX", "30000"), "+OK\r\n")
			eq(t, b.do("SET", "app:order:lock", "tok-b", "NX", "PX", "30000"), "$-1\r\n")
			eq(t, a.do("PEXPIRE", "app:order:lock", "60000"), ":1\r\n")
			mustContain(t, a.do("LOCKPROXY", "LOCKS"), "app:order:lock") // the locks' index is readable
			if r := a.do("LOCKPROXY", "FENCE", "app:order:lock"); !strings.HasPrefix(r, ":") {
				t.Errorf("FENCE: %q", r)
			}
			if r := b.do("DEL", "app:order:lock"); r == ":1\r\n" {
				t.Errorf("a stranger's DEL removed the lock")
			}
			eq(t, a.do("GET", "app:order:lock"), bulk("tok-a"))
			eq(t, a.do("DEL", "app:order:lock"), ":1\r\n")

			direct := dialRaw(t, srv.Addr)
			r := direct.do("SET", "app:order:lock", "x")
			if name == "only-through-lockproxy" {
				mustContain(t, r, "-NOPERM")
				mustContain(t, direct.do("DEL", "app:order:lock"), "-NOPERM")
			}
		})
	}

	// The app-keys recipe without COMMAND: check-upstream says so.
	t.Run("without-command", func(t *testing.T) {
		srv := valkeytest.Start(t)
		lines := []string{recipes["app-keys"][0] + " -command"}
		applyRecipe(t, srv.Addr, lines, pw)
		e := &env{t: t, srv: srv}
		opts := rulesOptions(t, appRule)
		opts.Upstream.Username, opts.Upstream.Password = "lockproxy", pw
		e.startProxy(opts)
		var failed []string
		for _, c := range e.p.CheckUpstream(ctx) {
			if !c.OK {
				failed = append(failed, c.What+": "+c.Detail)
			}
		}
		if len(failed) == 0 || !strings.Contains(failed[0], "COMMAND") || !strings.Contains(failed[0], "+command") {
			t.Fatalf("check-upstream without +command: %q", failed)
		}
	})
}
