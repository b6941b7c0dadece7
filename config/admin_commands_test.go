package config

import (
	"strings"
	"testing"
)

// admin_commands: admin by default, each word accepted, any other refused
// with the words it takes.
func TestAdminCommands(t *testing.T) {
	if d := Default(); d.AdminCommands != AdminCommandsAdmin {
		t.Errorf("default admin_commands = %q", d.AdminCommands)
	}
	for _, w := range []AdminCommands{AdminCommandsAdmin, AdminCommandsRefuse, AdminCommandsForward} {
		c, err := Parse("a.yaml", []byte("admin_commands: "+string(w)+"\n"))
		if err != nil || c.AdminCommands != w {
			t.Errorf("admin_commands: %s: %v, %v", w, c, err)
		}
	}
	_, err := Parse("a.yaml", []byte("admin_commands: allow\n"))
	if err == nil || !strings.Contains(err.Error(), `a.yaml:1: admin_commands: "allow" is not one of admin, refuse, forward`) {
		t.Errorf("admin_commands: allow: %v", err)
	}
}
