package clients

import "testing"

func TestNames(t *testing.T) {
	for _, c := range []struct {
		name string
		ok   bool
	}{
		{"worker-1", true},
		{"", true},
		{"a b", false},
		{"line\n", false},
		{"tab\t", false},
		{"é", false},
		{"ok\x00 after NUL", true}, // Valkey reads a C string
	} {
		if got := NameError([]byte(c.name)) == ""; got != c.ok {
			t.Errorf("%q: accepted %v, want %v", c.name, got, c.ok)
		}
	}
}

func TestSetInfo(t *testing.T) {
	for _, c := range []struct {
		attr, value, lib, errText string
	}{
		{"lib-name", "go-redis", "lib-name", ""},
		{"LIB-VER", "9.7.0", "lib-ver", ""},
		{"lib-name", "go redis", "", "ERR lib-name cannot contain spaces, newlines or special characters."},
		{"Lib-Ver", "9 7", "", "ERR lib-ver cannot contain spaces, newlines or special characters."},
		{"lib-os", "linux", "", "ERR Unrecognized option 'lib-os'"},
		{"lib-os", "has space", "", "ERR Unrecognized option 'lib-os'"}, // the option first
	} {
		lib, errText := SetInfo([]byte(c.attr), []byte(c.value))
		if lib != c.lib || errText != c.errText {
			t.Errorf("SETINFO %s %q: %q %q, want %q %q", c.attr, c.value, lib, errText, c.lib, c.errText)
		}
	}
}
