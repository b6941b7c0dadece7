package rewrite

import (
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/yuin/gopher-lua/parse"
)

// blocksBalanced must hold for every script that compiles: one it
// wrongly calls unbalanced would be sent without the monitor. Every
// script in the repository's test data, and random cuts and splices of
// them, that a Lua 5.1 parser accepts, are balanced; the shapes that close
// the function early are not.
func TestBlocksBalanced(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "scriptcheck", "testdata", "lua", "*.lua"))
	var corpus []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		corpus = append(corpus, string(b))
	}
	corpus = append(corpus,
		"local s = [==[ end ]] end ]==] return s",
		"-- end\nreturn 1 --[[ end ]] --[==[\nend]==]",
		"local t = {['end'] = 1, \"function\"} return t",
		"local x = 1e+5 + 0x1F + .5 return x",
		"local s = 'a\\\r\nb end' return s",
		"repeat local x = 1 until x == 1 while false do end for i = 1, 2 do end if a then elseif b then else end",
	)
	compiles := func(src string) bool {
		_, err := parse.Parse(strings.NewReader(src), "x")
		return err == nil
	}
	for _, src := range corpus {
		if compiles(src) && !blocksBalanced(src) {
			t.Errorf("compiles but called unbalanced: %q", src)
		}
	}
	r := rand.New(rand.NewSource(1))
	n := 0
	for i := 0; i < 20000; i++ {
		a, b := corpus[r.Intn(len(corpus))], corpus[r.Intn(len(corpus))]
		i1, i2 := r.Intn(len(a)+1), r.Intn(len(b)+1)
		src := a[:i1] + b[i2:]
		if compiles(src) {
			n++
			if !blocksBalanced(src) {
				t.Errorf("compiles but called unbalanced: %q", src)
			}
		}
	}
	if n < 100 {
		t.Fatalf("only %d splices compiled", n)
	}
	for _, src := range []string{
		"return 1 end redis.call('DEL', 'k') local f = function()",
		"return 1 --[[ ]] end redis.call('DEL', 'k') local f = function()",
		"if x then return 1 end end",
		"local s = 'unfinished",
		"--[[ unfinished",
	} {
		if blocksBalanced(src) {
			t.Errorf("called balanced: %q", src)
		}
	}
}
