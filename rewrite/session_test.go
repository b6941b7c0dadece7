package rewrite_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/lockproxy/lockproxy/policy"
	"github.com/lockproxy/lockproxy/rewrite"
)

// fakeSession implements rewrite.Session: it only says who the client
// is. Who holds which lock is Valkey's to say (the scripts read the owner
// records), so the fake has no grants to consult. Its owner depends on the
// rule's session scope, as the proxy's does: the connection, the client
// name or the client host.
type fakeSession struct {
	conn, name, addr string
	proto            int // 0: RESP2
}

func (s *fakeSession) Proto() int { return max(2, s.proto) }

func (s *fakeSession) Owner(r *policy.Rule) string {
	switch r.Session {
	case policy.SessionClientName:
		return s.name
	case policy.SessionClientAddr:
		return s.addr
	}
	return s.conn
}

var _ rewrite.Session = (*fakeSession)(nil)

// bs turns words into a command's arguments.
func bs(words ...string) [][]byte {
	out := make([][]byte, len(words))
	for i, w := range words {
		out[i] = []byte(w)
	}
	return out
}

// strs is the inverse of bs.
func strs(b [][]byte) []string {
	if b == nil {
		return nil
	}
	out := make([]string, len(b))
	for i, x := range b {
		out[i] = string(x)
	}
	return out
}

var effectKinds = map[rewrite.EffectKind]string{
	rewrite.Grant: "Grant", rewrite.Released: "Released", rewrite.Renewed: "Renewed",
	rewrite.SetValue: "SetValue", rewrite.Observed: "Observed", rewrite.Refused: "Refused",
	rewrite.Flushed: "Flushed", rewrite.FencedWrite: "FencedWrite",
}

var outcomes = map[rewrite.Outcome]string{
	rewrite.OutcomeReleased: "released", rewrite.OutcomeSuperseded: "superseded", rewrite.OutcomeForwarded: "forwarded",
}

// fmtEffect prints an effect's non-zero fields in a fixed order, so tables
// can state whole effects as one line. Reason is left out: it is checked
// against the plan's Err.
func fmtEffect(e rewrite.Effect) string {
	var b strings.Builder
	kind, ok := effectKinds[e.Kind]
	if !ok {
		kind = fmt.Sprintf("Kind(%d)", e.Kind)
	}
	b.WriteString(kind)
	if e.Command != "" {
		b.WriteString(" " + e.Command)
	}
	if e.Key != nil {
		fmt.Fprintf(&b, " key=%s", e.Key)
	}
	if e.Rule != nil {
		fmt.Fprintf(&b, " rule=%d", e.Rule.Index)
	}
	if e.Owner != "" {
		b.WriteString(" owner=" + e.Owner)
	}
	if e.Holder != "" {
		b.WriteString(" holder=" + e.Holder)
	}
	if e.Value != nil {
		fmt.Fprintf(&b, " value=%s", e.Value)
	}
	if e.Grant != 0 {
		fmt.Fprintf(&b, " grant=%d", e.Grant)
	}
	if e.Plain != 0 {
		fmt.Fprintf(&b, " plain=%d", e.Plain)
	}
	// What Fold wrote from the script's reply (zero at plan time). Held
	// depends on the clock: only "no record" (-1) is printed; tests that
	// care check the duration itself.
	if e.Outcome != rewrite.OutcomeNone {
		fmt.Fprintf(&b, " outcome=%s", outcomes[e.Outcome])
	}
	if e.Held < 0 {
		b.WriteString(" held=none")
	}
	if e.Lapsed {
		b.WriteString(" lapsed")
	}
	if e.Acted {
		b.WriteString(" acted")
	}
	if e.ValueLen != 0 {
		fmt.Fprintf(&b, " valuelen=%d", e.ValueLen)
	}
	if e.Unfenced {
		b.WriteString(" unfenced")
	}
	return b.String()
}

var planKinds = map[rewrite.Kind]string{
	rewrite.Forward: "Forward", rewrite.Run: "Run", rewrite.Refuse: "Refuse", rewrite.NeedKeys: "NeedKeys",
}

// evalArgs is the EVAL command a Run plan sends (the proxy sends EVALSHA
// first; the bytes of the reply are the same).
func evalArgs(p rewrite.Plan) []string {
	out := []string{"EVAL", p.Script.Body, fmt.Sprint(len(p.Keys))}
	out = append(out, strs(p.Keys)...)
	return append(out, strs(p.Args)...)
}

// checkErrorText checks the convention every refusal follows: one upper-case code
// word, a space, then a sentence; one line (it becomes a RESP error).
func checkErrorText(t testing.TB, err string) {
	t.Helper()
	code, rest, ok := strings.Cut(err, " ")
	if !ok || code == "" || rest == "" || strings.TrimSpace(rest) == "" {
		t.Errorf("error %q: want \"CODE sentence\"", err)
		return
	}
	for _, c := range code {
		if c < 'A' || c > 'Z' {
			t.Errorf("error %q: code word %q is not upper-case letters", err, code)
			break
		}
	}
	if strings.ContainsAny(err, "\r\n") {
		t.Errorf("error %q contains CR or LF: it would break the RESP error line", err)
	}
}
