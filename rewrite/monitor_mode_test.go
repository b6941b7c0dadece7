package rewrite

import (
	"testing"
	"time"

	"github.com/lockproxy/lockproxy/policy"
)

// The monitor learns a rule's session: user from the "=" before its mode
// (monitor.lua then lets only the grant count, no token); every other
// scope's mode is as before.
func TestMonitorModeSessionUser(t *testing.T) {
	for _, tc := range []struct {
		r    policy.Rule
		want string
	}{
		{policy.Rule{Session: policy.SessionConnection, Release: policy.ReleaseRewrite}, "rewrite"},
		{policy.Rule{Session: policy.SessionClientName, Release: policy.ReleaseReject, UnknownOwner: policy.UnknownOwnerForward}, "reject+"},
		{policy.Rule{Session: policy.SessionUser, Release: policy.ReleaseRewrite}, "=rewrite"},
		{policy.Rule{Session: policy.SessionUser, Release: policy.ReleaseObserve}, "=observe"},
		{policy.Rule{Session: policy.SessionUser, Release: policy.ReleaseRewrite, UnknownOwner: policy.UnknownOwnerForward}, "=rewrite+"},
		{policy.Rule{Session: policy.SessionUser, Release: policy.ReleaseReject, MaxLease: 30 * time.Second}, "=reject/30000"},
	} {
		m := monitorMode(&tc.r)
		if got := string(m); got != tc.want {
			t.Errorf("monitorMode(session %s, release %s) = %q, want %q", tc.r.Session, tc.r.Release, got, tc.want)
		}
		// The modes are shared: a caller's append must not reach them.
		if tc.r.MaxLease == 0 && cap(m) != len(m) {
			t.Errorf("monitorMode(%q) has room to append into (cap %d)", m, cap(m))
		}
	}
}
