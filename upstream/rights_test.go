package upstream

import (
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/lockproxy/lockproxy/internal/valkeytest"
)

// TryRights against a real Valkey: a user with every right passes, a user
// without one is refused exactly that one (EVAL's refusal is not taken for
// TIME's), and nothing the tries send changes Valkey (no script cached).
func TestTryRights(t *testing.T) {
	srv := valkeytest.Start(t, "user noeval on >pw ~* &* +@all -eval", "user notime on >pw ~* &* +@all -time",
		"user noselect on >pw ~* &* +@all -select")
	all := []Right{RightSelect(3), RightEvalSHA, RightEval, RightScriptLoad, RightTime}
	try := func(user string) error {
		nc, err := net.Dial("tcp", srv.Addr)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := RoundTrip(nc, [][]string{{"AUTH", user, "pw"}}); err != nil && user != "default" {
			t.Fatal(err)
		}
		return TryRights(nc, all, nil)
	}
	for user, want := range map[string]string{"default": "", "noeval": "+eval", "notime": "+time", "noselect": "+select"} {
		err := try(user)
		var re *RightsError
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v", user, err)
		case want == "":
		case !errors.As(err, &re) || len(re.Missing) != 1 || re.Missing[0].Name != want:
			t.Errorf("%s: %v, want %s missing alone", user, err, want)
		case !strings.Contains(err.Error(), "lacks "+want+": "):
			t.Errorf("%s: %q does not name %s", user, err, want)
		}
	}
	nc, _ := net.Dial("tcp", srv.Addr)
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	reps, err := RoundTrip(nc, [][]string{{"INFO", "memory"}})
	if err != nil || !strings.Contains(string(reps[0]), "number_of_cached_scripts:1\r\n") {
		t.Errorf("scripts cached by the tries (one, TIME's, expected): %v %q", err, reps)
	}
}
