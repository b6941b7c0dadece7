package locks

import (
	"testing"

	"github.com/lockproxy/lockproxy/policy"
)

func TestOwner(t *testing.T) {
	for _, tc := range []struct {
		mode       policy.SessionMode
		name, want string
	}{
		{policy.SessionConnection, "app", "conn:i-7"},
		{policy.SessionClientName, "app", "name:app"},
		{policy.SessionClientName, "", "conn:i-7"}, // no name yet: its connection
		{policy.SessionClientAddr, "app", "addr:10.0.0.5"},
		{policy.SessionUser, "app", "user:alice"}, // the name does not matter
		{policy.SessionUser, "", "user:alice"},
	} {
		if got := Owner(&policy.Rule{Session: tc.mode}, tc.name, "10.0.0.5", "conn:i-7", UserOwner("alice")); got != tc.want {
			t.Errorf("Owner(%s, name %q) = %q, want %q", tc.mode, tc.name, got, tc.want)
		}
	}
}
