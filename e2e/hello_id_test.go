package e2e_test

import (
	"strings"
	"testing"

	"github.com/lockproxy/lockproxy/proxy"
	"github.com/lockproxy/lockproxy/resp"
)

// helloID returns the id field of a HELLO reply (a RESP2 array of pairs or
// a RESP3 map), and the reply with that field set to 0, to compare the rest
// byte for byte.
func helloID(t *testing.T, reply string) (int64, string) {
	t.Helper()
	v, n, err := resp.Parse([]byte(reply))
	if err != nil || n != len(reply) || (v.Type != '*' && v.Type != '%') {
		t.Fatalf("not a HELLO reply: %q (%v)", reply, err)
	}
	for i := 0; i+1 < len(v.Elems); i += 2 {
		if string(v.Elems[i].Str) == "id" && v.Elems[i+1].Type == ':' {
			id := v.Elems[i+1].Int
			v.Elems[i+1].Int = 0
			return id, string(resp.AppendValue(nil, v))
		}
	}
	t.Fatalf("HELLO reply without an id field: %q", reply)
	return 0, ""
}

// clientID is the reply of CLIENT ID on r, as a number.
func clientID(t *testing.T, r *raw) int64 {
	t.Helper()
	v, _, err := resp.Parse([]byte(r.do("CLIENT", "ID")))
	if err != nil || v.Type != ':' {
		t.Fatalf("CLIENT ID: %v %+v", err, v)
	}
	return v.Int
}

// HELLO's id field is the client's id as CLIENT ID gives it, as on Valkey,
// in RESP2 and RESP3, on shared connections and on a connection of the
// client's own, and in EXEC's reply; every other byte of the reply is
// Valkey's. Before the fix
// HELLO answered Valkey's id of the upstream connection the proxy sent it
// on (shared by many clients).
func TestHelloIDIsClientID(t *testing.T) {
	eachEngine(t, func(t *testing.T, o proxy.Options) {
		e := newEnv(t, o)
		direct := dialRaw(t, e.srv.Addr)
		for _, own := range []bool{false, true} {
			r := dialRaw(t, e.addr)
			if own {
				// A transaction puts the client on a dedicated
				// connection for the rest of its life.
				eq(t, r.do("MULTI"), "+OK\r\n")
				eq(t, r.do("EXEC"), "*0\r\n")
			}
			id := clientID(t, r)
			for _, args := range [][]string{
				{"HELLO", "3"},
				{"HELLO"},
				{"HELLO", "2"},
				{"HELLO"},
				{"HELLO", "3", "SETNAME", "hi"},
				{"HELLO", "2", "AUTH", "default", "any"},
			} {
				got, rest := helloID(t, r.do(args...))
				if got != id {
					t.Errorf("own connection %v: %s: id %d, CLIENT ID %d", own, strings.Join(args, " "), got, id)
				}
				_, want := helloID(t, direct.do(args...))
				eq(t, rest, want)
			}
			eq(t, clientID(t, r), id)
			// Queued in a transaction: EXEC's element.
			eq(t, r.do("MULTI"), "+OK\r\n")
			eq(t, r.do("HELLO", "2"), "+QUEUED\r\n")
			exec, _, err := resp.Parse([]byte(r.do("EXEC")))
			if err != nil || len(exec.Elems) != 1 {
				t.Fatalf("EXEC: %v %+v", err, exec)
			}
			if got, _ := helloID(t, string(resp.AppendValue(nil, exec.Elems[0]))); got != id {
				t.Errorf("own connection %v: HELLO 2 in MULTI: id %d, CLIENT ID %d", own, got, id)
			}
			// Errors stay Valkey's.
			mustContain(t, r.do("HELLO", "4"), "-NOPROTO")
		}
	})
}
