package rewrite

import (
	"math/rand"
	"testing"

	"github.com/lockproxy/lockproxy/policy"
	lua "github.com/yuin/gopher-lua"
)

// luaGlob's pattern matches every key the glob matches (as Valkey's KEYS
// would list it): a key it missed would be a lock the monitor's quick
// test lets through unchecked.
func TestLuaGlobCoversGlob(t *testing.T) {
	L := lua.NewState()
	defer L.Close()
	find := func(key, pat string) bool {
		if err := L.CallByParam(lua.P{Fn: L.GetField(L.GetGlobal("string"), "find"), NRet: 1, Protect: true}, lua.LString(key), lua.LString(pat)); err != nil {
			t.Fatalf("%q: %v", pat, err)
		}
		v := L.Get(-1)
		L.Pop(1)
		return v != lua.LNil
	}
	globs := []string{"*:lock", "lock:*", "{*}:lock", "a?c*", "x[abc]y*", "x[^a-c]y", "*\\*lit*", "pre*mid*suf", "%.^$()", "[a-", "k\x00*", "*\xff"}
	alphabet := []byte("abcxy:{}lock*\\%.^$()[]-\x00\xff")
	r := rand.New(rand.NewSource(1))
	for _, g := range globs {
		p := policy.CompileAny(g)
		pat := luaGlob(g)
		matched := 0
		for i := 0; i < 3000; i++ {
			k := make([]byte, r.Intn(12))
			for j := range k {
				k[j] = alphabet[r.Intn(len(alphabet))]
			}
			// Also keys built from the glob's own bytes.
			if i%2 == 0 {
				k = []byte(g)
				for j := range k {
					if r.Intn(3) == 0 {
						k[j] = alphabet[r.Intn(len(alphabet))]
					}
				}
			}
			if p.Match(k) {
				matched++
				if !find(string(k), pat) {
					t.Errorf("glob %q matches %q, its Lua pattern %q does not", g, k, pat)
				}
			}
		}
		if matched == 0 && g != "[a-" {
			t.Logf("glob %q: no random key matched", g)
		}
	}
}

// The plain find the monitor makes of a "*literal" glob (suffixLiteral)
// answers as the glob's Lua pattern does, for every key.
func TestSuffixLiteralAsPattern(t *testing.T) {
	L := lua.NewState()
	defer L.Close()
	find := func(args ...lua.LValue) bool {
		if err := L.CallByParam(lua.P{Fn: L.GetField(L.GetGlobal("string"), "find"), NRet: 1, Protect: true}, args...); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		v := L.Get(-1)
		L.Pop(1)
		return v != lua.LNil
	}
	for _, g := range []string{"*:lock", "*k\x00", "*\xff", "*%.^$()", "**:lock", "*\\*lit", "*a?c", "*x[ab]", "lock:*", "*"} {
		pat := luaGlob(g)
		lit, ok := suffixLiteral(pat)
		want := map[string]bool{"*:lock": true, "*k\x00": true, "*\xff": true, "*%.^$()": true, "**:lock": true, "*\\*lit": true}[g]
		if ok != want {
			t.Errorf("glob %q (pattern %q): suffixLiteral says %v", g, pat, ok)
		}
		if !ok {
			continue
		}
		alphabet := []byte("abk:lock*\\%.^$()\x00\xff")
		r := rand.New(rand.NewSource(2))
		for i := 0; i < 3000; i++ {
			k := make([]byte, r.Intn(10))
			for j := range k {
				k[j] = alphabet[r.Intn(len(alphabet))]
			}
			if i%2 == 0 {
				k = append(k, lit[r.Intn(len(lit)+1):]...)
			}
			a := find(lua.LString(k), lua.LString(pat))
			b := find(lua.LString(k), lua.LString(lit), lua.LNumber(-len(lit)), lua.LTrue)
			if a != b {
				t.Errorf("glob %q, key %q: pattern %q says %v, plain find of %q says %v", g, k, pat, a, lit, b)
			}
		}
	}
}
