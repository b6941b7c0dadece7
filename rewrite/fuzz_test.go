package rewrite_test

import (
	"strings"
	"testing"

	"github.com/lockproxy/lockproxy/keyspec"
	"github.com/lockproxy/lockproxy/rewrite"
)

// FuzzDecide: any command, from any of three sessions, against the rules
// of testConfig (every release mode, session scope and fence check): Decide
// never panics, and its plans are well formed. Refusals are "CODE
// sentence" errors on one line with one Refused effect; Run plans name a
// script lockproxy sends, with keys; effects own their bytes. A NeedKeys
// plan is followed through DecideKeys with each argument as a key.
//
// The input is the command's arguments separated by single spaces (empty
// arguments allowed); who picks the session. Seeds: testdata/fuzz/FuzzDecide.
func FuzzDecide(f *testing.F) {
	d := testDecider(f, testConfig, "")
	scripts := map[*rewrite.Script]bool{}
	for _, s := range rewrite.Scripts {
		scripts[s] = true
	}
	f.Fuzz(func(t *testing.T, who byte, line string) {
		alice, bob, carol := sessions()
		s := []*fakeSession{alice, bob, carol}[int(who)%3]
		var args [][]byte
		if line != "" {
			args = bs(strings.Split(line, " ")...)
		}
		p := d.Decide(args, s, make([]keyspec.Key, 0, 4))
		checkFuzzPlan(t, p, args, scripts)
		if p.Kind == rewrite.NeedKeys {
			var keys []keyspec.KeyWithFlags
			for i, a := range args[1:] {
				flags := []keyspec.KeyFlags{keyspec.KeyRO | keyspec.KeyAccess, keyspec.KeyOW | keyspec.KeyUpdate, keyspec.KeyRW | keyspec.KeyDelete, 0}[i%4]
				keys = append(keys, keyspec.KeyWithFlags{Key: string(a), Flags: flags})
			}
			p = d.DecideKeys(args, keys, s)
			if p.Kind == rewrite.NeedKeys {
				t.Fatalf("DecideKeys(%q) = NeedKeys", args)
			}
			checkFuzzPlan(t, p, args, scripts)
		}
	})
}

func checkFuzzPlan(t *testing.T, p rewrite.Plan, args [][]byte, scripts map[*rewrite.Script]bool) {
	t.Helper()
	switch p.Kind {
	case rewrite.Forward, rewrite.NeedKeys:
		if p.Script != nil || p.Err != "" || p.Keys != nil || p.Args != nil {
			t.Fatalf("%q: %s plan carries a script or an error: %+v", args, planKinds[p.Kind], p)
		}
	case rewrite.Run:
		if !scripts[p.Script] || len(p.Keys) == 0 || len(p.Args) == 0 || p.Err != "" {
			t.Fatalf("%q: malformed Run plan %+v", args, p)
		}
		if (p.Shape == rewrite.AcquireReply) != (p.Script == rewrite.Acquire) {
			t.Fatalf("%q: script %s with shape %d", args, p.Script.Name, p.Shape)
		}
	case rewrite.Refuse:
		code, rest, ok := strings.Cut(p.Err, " ")
		if !ok || code == "" || strings.TrimSpace(rest) == "" || strings.Trim(code, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != "" {
			t.Fatalf("%q: refusal %q does not start with an upper-case code word and a sentence", args, p.Err)
		}
		if strings.ContainsAny(p.Err, "\r\n") {
			t.Fatalf("%q: refusal %q contains CR/LF", args, p.Err)
		}
		if len(p.Effects) != 1 || p.Effects[0].Kind != rewrite.Refused || p.Effects[0].Reason != p.Err {
			t.Fatalf("%q: refusal without its one Refused effect: %+v", args, p.Effects)
		}
	default:
		t.Fatalf("%q: plan kind %d", args, p.Kind)
	}
	for _, e := range p.Effects {
		if e.Kind == 0 || e.Command == "" {
			t.Fatalf("%q: incomplete effect %+v", args, e)
		}
		for _, a := range args {
			if len(e.Key) > 0 && len(a) > 0 && &e.Key[0] == &a[0] {
				t.Fatalf("%q: effect key aliases an argument", args)
			}
			if len(e.Value) > 0 && len(a) > 0 && &e.Value[0] == &a[0] {
				t.Fatalf("%q: effect value aliases an argument", args)
			}
		}
	}
}
