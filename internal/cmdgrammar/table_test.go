package cmdgrammar

import (
	"context"
	"testing"

	"github.com/lockproxy/lockproxy/internal/valkeytest"
	"github.com/redis/go-redis/v9"
)

// The table as a real valkey-server states it, read through a RESP3
// client (maps) and a RESP2 one (flat lists): the same commands, SET's
// tree as COMMAND DOCS gives it, and the fuzzed set holding the writers
// and the admin commands, not the readers.
func TestParseFromServer(t *testing.T) {
	srv := valkeytest.Start(t)
	ctx := context.Background()
	read := func(proto int) *Table {
		c := redis.NewClient(&redis.Options{Addr: srv.Addr, Protocol: proto})
		defer c.Close()
		docs, err := c.Do(ctx, "COMMAND", "DOCS").Result()
		if err != nil {
			t.Fatal(err)
		}
		info, err := c.Do(ctx, "COMMAND", "INFO").Result()
		if err != nil {
			t.Fatal(err)
		}
		tab, err := Parse(docs, info)
		if err != nil {
			t.Fatal(err)
		}
		return tab
	}
	t3, t2 := read(3), read(2)
	if len(t3.Commands) != len(t2.Commands) || len(t3.Commands) < 200 {
		t.Fatalf("RESP3 read %d commands, RESP2 %d", len(t3.Commands), len(t2.Commands))
	}
	set := t3.Lookup("set")
	if set == nil || !set.Writes() || set.Reconfigures() || set.Arity != -3 {
		t.Fatalf("SET: %+v", set)
	}
	var names []string
	for _, a := range set.Args {
		names = append(names, a.Name+"/"+a.Type)
	}
	if got := join(names); got != "key/key value/string condition/oneof get/pure-token expiration/oneof" {
		t.Fatalf("SET's arguments: %s", got)
	}
	if !set.Args[2].Optional || set.Args[2].Args[0].Token != "NX" {
		t.Fatalf("SET's condition: %+v", set.Args[2])
	}
	fuzzed := map[string]bool{}
	for _, c := range t3.Fuzzed() {
		fuzzed[c.Name()] = true
	}
	for _, n := range []string{"SET", "DEL", "COPY", "MOVE", "MIGRATE", "FUNCTION LOAD", "FUNCTION RESTORE",
		"ACL SETUSER", "CONFIG SET", "REPLICAOF", "SHUTDOWN", "CLUSTER ADDSLOTS", "CLUSTER SETSLOT", "FLUSHALL"} {
		if !fuzzed[n] {
			t.Errorf("%s is not fuzzed", n)
		}
	}
	for _, n := range []string{"GET", "HGETALL", "PING", "CLUSTER INFO", "ACL WHOAMI"} {
		if fuzzed[n] {
			t.Errorf("%s, which changes nothing, is fuzzed", n)
		}
	}
	if c := t3.Lookup("config set"); c.StatName() != "config|set" || len(c.Words) != 2 {
		t.Fatalf("CONFIG SET: %+v", c)
	}
}

func join(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += " "
		}
		out += x
	}
	return out
}
