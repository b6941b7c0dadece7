package luaeval

import (
	"fmt"
	"testing"
)

func TestEdgeProbe(t *testing.T) {
	s := New()
	for _, b := range []string{
		"local function f() return 1 + f() end return f()",
		"local function f(n) if n == 0 then return 0 end return 1 + f(n-1) end return f(150)",
		"local t = {} t[1] = t return t",
		"return select('#', ...)",
		"return string.rep('x', 3, 'y')",
		"local t = {} for i=1,300 do t[i]=i end return #t",
	} {
		fmt.Printf("%q => %.200q\n", b, s.Eval(b, nil, nil))
	}
}
