package commands

import (
	"os"
	"strings"
	"testing"

	"github.com/lockproxy/lockproxy/internal/servertable"
	"github.com/lockproxy/lockproxy/keyspec"
)

// TestGatedFromServers: the gated list derived from the "admin" flag of
// valkey-server 8 and of redis-server 7.0 is the fallback's, name for
// name; it holds every command the issue that asked for the gate names,
// and none that only reads what a client may read.
func TestGatedFromServers(t *testing.T) {
	for _, bin := range []string{"valkey-server", "redis-server"} {
		t.Run(bin, func(t *testing.T) {
			tab := servertable.Load(t, bin)
			got := FromTable(tab).GatedList()
			if strings.Join(got, ",") != strings.Join(Fallback.GatedList(), ",") {
				t.Errorf("derived from %s:\n%q\nfallback:\n%q", bin, got, Fallback.GatedList())
			}
			for _, n := range gateExempt {
				if tab.LookupString(n) == nil {
					t.Errorf("exempt %s is not a command of %s", n, bin)
				} else if !tab.LookupString(n).Flags.Has(keyspec.Admin) {
					t.Errorf("exempt %s is not flagged admin by %s: drop it from gateExempt", n, bin)
				}
			}
		})
	}
	must := []string{"acl|setuser", "acl|deluser", "acl|load", "acl|save", "acl|list", "acl|getuser", "acl|dryrun", "acl|log reset",
		"config|set", "config|rewrite", "config|resetstat", "replicaof", "slaveof", "failover", "shutdown",
		"module|load", "module|loadex", "module|unload", "debug",
		"cluster|addslots", "cluster|addslotsrange", "cluster|delslots", "cluster|delslotsrange", "cluster|setslot",
		"cluster|meet", "cluster|forget", "cluster|replicate", "cluster|failover", "cluster|bumpepoch",
		"cluster|set-config-epoch", "cluster|flushslots", "cluster|reset"}
	never := []string{"info", "acl|whoami", "acl|users", "acl|log", "acl|cat", "cluster|nodes", "cluster|slots", "cluster|shards",
		"cluster|info", "cluster|myid", "cluster|keyslot", "client|no-touch", "client|no-evict", "client|setname",
		"flushall", "sort", "migrate", "monitor", "slowlog|get", "get", "set"}
	in := map[string]bool{}
	for _, n := range Fallback.GatedList() {
		in[n] = true
	}
	for _, n := range must {
		if !in[n] {
			t.Errorf("%s is not gated", n)
		}
	}
	for _, n := range never {
		if in[n] {
			t.Errorf("%s is gated", n)
		}
	}
}

// TestGated: the lookup the proxy makes for every command, in any letter
// case, by name and by subcommand (ACL LOG only with RESET).
func TestGated(t *testing.T) {
	for cmd, want := range map[string]bool{
		"CONFIG SET maxmemory 1": true, "config Get maxmemory": true, "Config ReWrite": true, "CONFIG HELP": false,
		"ACL SETUSER default on nopass": true, "acl list": true, "ACL LOG": false, "ACL LOG 10": false,
		"ACL LOG RESET": true, "acl log Reset": true, "ACL WHOAMI": false, "ACL": false,
		"REPLICAOF no one": true, "slaveOF 127.0.0.1 1": true, "SHUTDOWN NOSAVE": true, "DEBUG SLEEP 0": true,
		"CLUSTER DELSLOTS 1": true, "cluster set-config-epoch 3": true, "CLUSTER NODES": false, "CLUSTER SLOTS": false,
		"CLUSTER": false, "CLIENT NO-EVICT on": false, "CLIENT PAUSE 10": true, "GET k": false, "SET k v": false,
		"INFO": false, "MONITOR": false, "a-name-longer-than-any-command x": false,
		"CLUSTER a-subcommand-name-longer-than-any-there-is": false,
	} {
		var args [][]byte
		for _, a := range strings.Fields(cmd) {
			args = append(args, []byte(a))
		}
		if got := Fallback.Gated(args); got != want {
			t.Errorf("Gated(%s) = %v, want %v", cmd, got, want)
		}
	}
}

// TestGatedNoAlloc: the proxy asks for every command; the lookup must not
// allocate.
func TestGatedNoAlloc(t *testing.T) {
	args := [][]byte{[]byte("Config"), []byte("SET"), []byte("x"), []byte("y")}
	get := [][]byte{[]byte("GET"), []byte("k")}
	if n := testing.AllocsPerRun(100, func() { Fallback.Gated(args); Fallback.Gated(get) }); n != 0 {
		t.Errorf("Gated allocates %v times", n)
	}
}

// TestGatedListDocumented: docs/operations.md prints the gated list (the
// block after "<!-- gated-commands -->"), command for command.
func TestGatedListDocumented(t *testing.T) {
	raw, err := os.ReadFile("../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(raw), "<!-- gated-commands -->\n```text\n")
	block, _, ok2 := strings.Cut(block, "```")
	if !ok || !ok2 {
		t.Fatal("docs/operations.md has no gated-commands block")
	}
	var doc []string
	for _, f := range strings.Split(strings.ReplaceAll(block, "\n", " "), ",") {
		if f = strings.TrimSpace(f); f != "" {
			doc = append(doc, f)
		}
	}
	var want []string
	for _, g := range Fallback.GatedList() {
		want = append(want, strings.ToUpper(strings.ReplaceAll(g, "|", " ")))
	}
	if strings.Join(doc, ",") != strings.Join(want, ",") {
		t.Errorf("docs/operations.md lists\n%q\nthe table gates\n%q", doc, want)
	}
}

// BenchmarkGated: the lookup the proxy adds to every command (GET, a
// command with no gated entry; CONFIG GET, a container's subcommand).
func BenchmarkGated(b *testing.B) {
	get := [][]byte{[]byte("GET"), []byte("k")}
	cfg := [][]byte{[]byte("CONFIG"), []byte("GET"), []byte("maxmemory")}
	b.Run("GET", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			Fallback.Gated(get)
		}
	})
	b.Run("CONFIG-GET", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			Fallback.Gated(cfg)
		}
	})
	b.Run("Kind-GET", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			Fallback.Kind(get[0])
		}
	})
}
