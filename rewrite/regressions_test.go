package rewrite_test

import (
	"strconv"
	"testing"

	"github.com/lockproxy/lockproxy/keyspec"
	"github.com/lockproxy/lockproxy/rewrite"
)

// Regressions: each test pins a bug found in package rewrite, now fixed, so
// that it stays fixed. The comments describe the bug as it was.

// A write to a guarded key escapes fencing when the same command also
// names a lock key: Decide takes the lock path (release, generic) and only
// commands that touch no lock key reach fence(). Here bob holds
// other:lock but no grant of {r}:flock, whose guarded key {r}:data the
// token-checked release then deletes unconditionally as a "plain" key
// (unfenced_writes: reject should refuse it); and COPY from a lock onto a
// guarded key is forwarded unfenced. (Now the refusal of a writer without
// a grant is the Fenced script's: the plan must be Fenced, checking
// {r}:data, or refused outright.)
func TestRegressionFenceBypassWithLockKey(t *testing.T) {
	d := testDecider(t, testConfig, "")
	_, bob, _ := sessions()
	for _, args := range [][]string{
		{"DEL", "other:lock", "{r}:data"},
		{"COPY", "{r}:flock", "{r}:data", "REPLACE"},
	} {
		p := d.Decide(bs(args...), bob, nil)
		if p.Kind != rewrite.Refuse && !fencedChecks(p, "{r}:data") {
			t.Errorf("%q by a client with no grant of {r}:flock: %s %v, want Refuse, or Fenced checking {r}:data", args, planKinds[p.Kind], strs(p.Keys))
		}
	}
}

// fencedChecks reports whether p runs the Fenced script with a check of
// key (ARGV: owner, number of checks, then per check the number of
// candidate locks, the check, unfenced_writes and the key).
func fencedChecks(p rewrite.Plan, key string) bool {
	// ARGV: owner, protocol, number of checks, then four words a check.
	if p.Kind != rewrite.Run || p.Script != rewrite.Fenced || len(p.Args) < 3 {
		return false
	}
	n, _ := strconv.Atoi(string(p.Args[2]))
	for i, a := 0, 3; i < n && a+3 < len(p.Args); i, a = i+1, a+4 {
		if string(p.Args[a+3]) == key {
			return true
		}
	}
	return false
}

// The NeedKeys path never fences: DecideKeys only looks for lock keys, so
// SORT ... STORE onto a guarded key from a client with no grant is
// forwarded (unfenced_writes: reject should refuse it), and the holder's
// goes unchecked.
func TestRegressionDecideKeysSkipsFencing(t *testing.T) {
	d := testDecider(t, testConfig, "")
	_, bob, _ := sessions()
	args := bs("SORT", "src", "STORE", "{r}:data")
	if p := d.Decide(args, bob, nil); p.Kind != rewrite.NeedKeys {
		t.Fatalf("Decide: %s, want NeedKeys", planKinds[p.Kind])
	}
	keys := []keyspec.KeyWithFlags{
		{Key: "src", Flags: keyspec.KeyRO | keyspec.KeyAccess},
		{Key: "{r}:data", Flags: keyspec.KeyOW | keyspec.KeyUpdate},
	}
	if p := d.DecideKeys(args, keys, bob); !fencedChecks(p, "{r}:data") {
		t.Errorf("SORT src STORE {r}:data: %s %v, want Fenced checking {r}:data", planKinds[p.Kind], strs(p.Keys))
	}
}

// A read-only command with key specs the server must resolve (SORT_RO, and
// SORT without STORE) always gets NeedKeys: one COMMAND GETKEYSANDFLAGS
// round trip per SORT on any key, although a read is never refused or
// fenced. Issue 3 item 11: commands on non-lock keys pay no extra round
// trip.
func TestRegressionReadOnlyNeedKeys(t *testing.T) {
	d := testDecider(t, testConfig, "")
	alice, _, _ := sessions()
	for _, args := range [][]string{
		{"SORT_RO", "mylist"},
		{"SORT_RO", "mylist", "BY", "w_*", "GET", "o_*"},
		{"SORT", "mylist", "LIMIT", "0", "10"},
	} {
		if p := d.Decide(bs(args...), alice, nil); p.Kind != rewrite.Forward {
			t.Errorf("%q: %s, want Forward", args, planKinds[p.Kind])
		}
	}
}

// parseSet accepts numbers Valkey's SET rejects (a leading '+' or zero,
// EX too large to become milliseconds), and Acquire calls SET with
// redis.call, so the client gets the error with the script's suffix
// ("... script: <sha>, on @user_script:1.") instead of SET's own. The same
// holds for a holder's renewal with a bad argument (Guarded uses
// redis.call too). redis.pcall, returning the error table as Fenced does,
// would keep the command's own error.
func TestRegressionScriptErrorsNotVerbatim(t *testing.T) {
	runAnswerCases(t, []answerCase{
		{args: []string{"SET", "resource:lock", "v", "NX", "PX", "05"}, setup: [][]string{{"DEL", "resource:lock"}}},
		{args: []string{"SET", "resource:lock", "v", "NX", "PX", "+5"}, setup: [][]string{{"DEL", "resource:lock"}}},
		{args: []string{"SET", "resource:lock", "v", "NX", "EX", "9223372036854775"}, setup: [][]string{{"DEL", "resource:lock"}}},
		{args: []string{"PEXPIRE", "resource:lock", "soon"}},
		{args: []string{"GETEX", "resource:lock", "PX", "-1"}},
	})
}

// A fenced write answers through Lua's type conversion, which loses what
// RESP3 distinguishes and null-array shapes: ZINCRBY answers a double
// (",1.5") to a RESP3 client but a bulk string through the script, and
// LPOP key count on a missing key answers "*-1" in RESP2 but "$-1" through
// the script. (Running the command under redis.setresp(3) would keep the
// RESP3 types.)
func TestRegressionFencedReplyTypes(t *testing.T) {
	runAnswerCases(t, []answerCase{
		{args: []string{"ZINCRBY", "{r}:items:z", "1.5", "m"}},
		// Known limit, documented with the Fenced script: LPOP key count on
		// a missing key answers a null bulk, not a null array, to RESP2.
	})
}

// A DEL forwarded with an observed lock leaves Effect.Plain at 0 although
// plain keys share the reply, while the Run path counts them: the proxy's
// successor-deletion test (reply > Plain) then reads "DEL p1 obs:a" → 1
// (p1 deleted, the lock already gone) as a successor deletion. (Now every
// DEL of a lock key runs Release, observed ones too.)
func TestRegressionForwardedDELPlainCount(t *testing.T) {
	d := testDecider(t, testConfig, "")
	alice, _, _ := sessions()
	p := d.Decide(bs("DEL", "p1", "obs:a"), alice, nil)
	if p.Script != rewrite.Release || len(p.Effects) != 1 {
		t.Fatalf("plan %+v", p)
	}
	if p.Effects[0].Plain != 1 {
		t.Errorf("effect Plain = %d, want 1 (p1)", p.Effects[0].Plain)
	}
}
