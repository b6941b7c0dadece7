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
