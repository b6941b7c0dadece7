package rewrite_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/lockproxy/lockproxy/keyspec"
	"github.com/lockproxy/lockproxy/resp"
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
		if shapes := scriptShapes[p.Script]; !strings.Contains(shapes, string(rune('0'+p.Shape))) {
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

// scriptShapes are the reply shapes each script's reply can be folded
// with, as digits.
var scriptShapes = map[*rewrite.Script]string{
	rewrite.Acquire: shapeDigits(rewrite.AcquireReply, rewrite.AcquireGetReply, rewrite.SetNXReply),
	rewrite.Release: shapeDigits(rewrite.ReleaseReply),
	rewrite.Holder:  shapeDigits(rewrite.HolderReply),
	rewrite.Fenced:  shapeDigits(rewrite.FencedReply),
}

func shapeDigits(shapes ...rewrite.Shape) string {
	var b []byte
	for _, s := range shapes {
		b = append(b, byte('0'+s))
	}
	return string(b)
}

// FuzzFold: whatever bytes come back for a script (a truncated reply, an
// error, another shape's reply), Fold never panics, never writes past the
// effects it was given, and answers a complete RESP reply when the input
// was one. Seeds: real script replies of each shape.
func FuzzFold(f *testing.F) {
	for _, seed := range []string{
		"*2\r\n:1\r\n+OK\r\n", "*2\r\n:0\r\n$-1\r\n", "*2\r\n:0\r\n_\r\n", "*2\r\n:3\r\n$3\r\nabc\r\n",
		"*8\r\n:1\r\n$8\r\nreleased\r\n$0\r\n\r\n:12\r\n:0\r\n:7\r\n$3\r\nabc\r\n:3\r\n",
		"*2\r\n:1\r\n:1\r\n", "*2\r\n$2\r\n35\r\n+OK\r\n", "*1\r\n$1\r\n-\r\n",
		"-NOTOWNER 1\r\n", "-UNFENCED 2\r\n", "-LOCKED 1\r\n", "-TOKENRELEASE 9\r\n", "-STALE lockproxy refused\r\n",
		"*2\r\n:1\r\n%1\r\n$1\r\na\r\n,1.5\r\n", "*-1\r\n", "*2\r\n", "*99999999999999999\r\n",
	} {
		for shape := byte(0); shape <= byte(rewrite.FencedReply); shape++ {
			f.Add(shape, byte(2), byte(1), []byte(seed))
		}
	}
	d := testDecider(f, testConfig, "")
	rule := d.Rules.Match([]byte("resource:lock"))
	f.Fuzz(func(t *testing.T, shape, proto, n byte, reply []byte) {
		effects := make([]rewrite.Effect, int(n%4), 4)
		for i := range effects {
			effects[i] = rewrite.Effect{Kind: rewrite.Released, Command: "DEL", Key: []byte("resource:lock"), Rule: rule, Owner: "conn:A"}
		}
		spare := effects[:cap(effects)][len(effects):]
		for i := range spare {
			spare[i].Command = "untouched"
		}
		in := append([]byte(nil), reply...)
		out := rewrite.Fold(rewrite.Shape(shape%(byte(rewrite.FencedReply)+1)), effects, reply, 2+int(proto%2))
		if !bytes.Equal(in, reply) {
			t.Fatalf("Fold wrote into the reply: %q became %q", in, reply)
		}
		for i := range spare {
			if spare[i].Command != "untouched" || spare[i].Kind != 0 {
				t.Fatalf("Fold wrote past the effects it was given: %+v", spare[i])
			}
		}
		var fr resp.Framer
		if m, err := fr.Frame(in); err == nil && m == len(in) {
			var fo resp.Framer
			if k, err := fo.Frame(out); err != nil || k != len(out) {
				t.Fatalf("Fold(%q) = %q: not one complete reply (%d, %v)", in, out, k, err)
			}
		}
	})
}
