package scriptcheck

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// FuzzClassify: any input is analysed without panicking or running away
// (the limits hold), the analysis is deterministic, every site names a
// line of the script, and a script the analysis gave up on is Unknown for
// every key. The seed corpus is testdata/fuzz/FuzzClassify plus the test
// scripts under testdata/lua.
func FuzzClassify(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "lua", "*.lua"))
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	f.Fuzz(func(t *testing.T, body string) {
		// Lua ends a line at \n, \r, \r\n or \n\r: counting both bytes
		// bounds the number of lines whatever the mix.
		lines := strings.Count(body, "\n") + strings.Count(body, "\r") + 1
		r := Analyze(body)
		if strings.Contains(r.Err, "internal error") {
			t.Fatalf("%s\n%q", r.Err, body)
		}
		if again := Analyze(body); !reflect.DeepEqual(r, again) {
			t.Fatalf("not deterministic:\n%+v\n%+v", r, again)
		}
		for _, s := range r.Sites {
			if s.Line < 1 || s.Line > lines {
				t.Fatalf("site line %d outside 1..%d: %+v", s.Line, lines, s)
			}
			if s.Verdict < Guarded || s.Verdict > Unknown || s.Reason == "" {
				t.Fatalf("bad site %+v", s)
			}
		}
		for i := 1; i <= 3; i++ {
			v, site := r.Key(i)
			if r.Err != "" && v != Unknown {
				t.Fatalf("gave up (%s) but KEYS[%d] is %v", r.Err, i, v)
			}
			if (v == Blind || v == Unknown) && site == nil {
				t.Fatalf("KEYS[%d] %v without a site", i, v)
			}
		}
		lib := AnalyzeLibrary(body)
		for name, fr := range lib.Functions {
			if strings.Contains(fr.Err, "internal error") || fr.Function != name {
				t.Fatalf("function %q: %+v", name, fr)
			}
		}
		if strings.Contains(lib.Err, "internal error") {
			t.Fatal(lib.Err)
		}
	})
}
