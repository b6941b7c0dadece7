package rewrite_test

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/lockproxy/lockproxy/policy"
	"github.com/lockproxy/lockproxy/rewrite"
)

// fakeGrant is one grant the fake proxy remembers.
type fakeGrant struct {
	value  string
	number int64
	lapsed bool // the lease is over (Holder skips it; Grant still reports it)
}

// world is the fake proxy's grant table, shared by the sessions of a test.
type world map[string]map[string]fakeGrant // owner → lock key → grant

// fakeSession implements rewrite.Session over a world. Its owner depends
// on the rule's session scope, as the proxy's does: the connection, the
// client name or the client host.
type fakeSession struct {
	conn, name, addr string
	w                world
}

func (s *fakeSession) Owner(r *policy.Rule) string {
	switch r.Session {
	case policy.SessionClientName:
		return s.name
	case policy.SessionClientAddr:
		return s.addr
	}
	return s.conn
}

func (s *fakeSession) Grant(key []byte, owner string) ([]byte, int64, bool) {
	g, ok := s.w[owner][string(key)]
	if !ok {
		return nil, 0, false
	}
	return []byte(g.value), g.number, true
}

func (s *fakeSession) Holder(key []byte, notOwner string) string {
	owners := make([]string, 0, len(s.w))
	for o := range s.w {
		owners = append(owners, o)
	}
	sort.Strings(owners)
	for _, o := range owners {
		if g, ok := s.w[o][string(key)]; ok && o != notOwner && !g.lapsed {
			return o
		}
	}
	return ""
}

func (s *fakeSession) Held(owner string) []rewrite.Held {
	keys := make([]string, 0, len(s.w[owner]))
	for k := range s.w[owner] {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]rewrite.Held, 0, len(keys))
	for _, k := range keys {
		out = append(out, rewrite.Held{Key: []byte(k), Number: s.w[owner][k].number})
	}
	return out
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
	rewrite.Flushed: "Flushed", rewrite.FencedWrite: "FencedWrite", rewrite.Unfenced: "Unfenced",
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
	if e.Lease != 0 {
		fmt.Fprintf(&b, " lease=%v", e.Lease)
	}
	if !e.At.IsZero() {
		fmt.Fprintf(&b, " at=%d", e.At.UnixMilli())
	}
	if e.Plain != 0 {
		fmt.Fprintf(&b, " plain=%d", e.Plain)
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
