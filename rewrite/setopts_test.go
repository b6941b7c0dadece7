package rewrite

import (
	"math/rand"
	"strings"
	"testing"

	"github.com/lockproxy/lockproxy/internal/valkeytest"
)

// TestSetGrammarMatchesValkey: parseSet and parseGetex accept exactly the
// option lists a real valkey-server accepts (a syntax error there is ok
// false here), and, where the grammar is accepted, expOK is whether
// Valkey takes the last expiry's value. The lists are every sequence of
// up to three words from the pool, and random longer ones (repeats,
// letter cases, orders, bad numbers, a word with a NUL byte).
func TestSetGrammarMatchesValkey(t *testing.T) {
	srv := valkeytest.Start(t)
	c := valkeytest.Dial(t, srv.Addr, 2)
	words := []string{"NX", "xx", "Get", "KEEPTTL", "persist", "EX", "px", "ExAt", "PXAT", "10", "0", "-5", "abc", "05", "9223372036854776", "nx\x00junk", "PX\x00", "bogus"}
	var lists [][]string
	var gen func(prefix []string, n int)
	gen = func(prefix []string, n int) {
		lists = append(lists, append([]string(nil), prefix...))
		if n == 0 {
			return
		}
		for _, w := range words {
			gen(append(prefix, w), n-1)
		}
	}
	gen(nil, 3)
	rng := rand.New(rand.NewSource(38))
	for range 3000 {
		l := make([]string, 4+rng.Intn(5))
		for i := range l {
			l[i] = words[rng.Intn(len(words))]
			if rng.Intn(3) == 0 {
				l[i] = strings.ToLower(l[i])
			}
		}
		lists = append(lists, l)
	}
	accepted, refused := 0, 0
	for _, l := range lists {
		for _, set := range []bool{true, false} {
			args := append([]string{"GETEX", "g"}, l...)
			if set {
				args = append([]string{"SET", "k", "v"}, l...)
			}
			c.Do(t, "SET", "g", "v") // GETEX reads it (an EXAT in the past deletes it)
			reply := string(c.Do(t, args...))
			syntax := reply == "-ERR syntax error\r\n"
			bargs := make([][]byte, len(args))
			for i, a := range args {
				bargs[i] = []byte(a)
			}
			o := parseStringOpts(bargs, set)
			if o.ok == syntax {
				t.Errorf("%q: Valkey answers %q, parse ok %v", args, reply, o.ok)
				continue
			}
			if syntax {
				refused++
				continue
			}
			accepted++
			numErr := strings.HasPrefix(reply, "-ERR value is not an integer") || strings.HasPrefix(reply, "-ERR invalid expire time")
			if o.exp > 0 && o.expOK == numErr {
				t.Errorf("%q: Valkey answers %q, expiry ok %v", args, reply, o.expOK)
			}
			if o.exp == 0 && numErr {
				t.Errorf("%q: Valkey answers %q, but no expiry was found", args, reply)
			}
		}
	}
	t.Logf("%d option lists × SET and GETEX: %d accepted, %d syntax errors, parse agrees on all", len(lists), accepted, refused)
}
