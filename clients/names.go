package clients

import "github.com/lockproxy/lockproxy/resp"

// validName is Valkey's rule for client names and library info: printable
// ASCII without spaces. Valkey checks the value as a C string, up to its
// first NUL byte, and keeps the whole of it.
func validName(b []byte) bool {
	for _, c := range b {
		if c == 0 {
			return true
		}
		if c < '!' || c > '~' {
			return false
		}
	}
	return true
}

// NameError is the error text of CLIENT SETNAME and HELLO ... SETNAME for
// name, "" when Valkey accepts it.
func NameError(name []byte) string {
	if validName(name) {
		return ""
	}
	return errClientName
}

// SetInfo reads CLIENT SETINFO attr value: lib is the attribute it sets
// ("lib-name" or "lib-ver"), or "" with errText, Valkey's error, when the
// attribute or the value is refused.
func SetInfo(attr, value []byte) (lib, errText string) {
	switch {
	case resp.EqualFold(attr, "lib-name"):
		lib = "lib-name"
	case resp.EqualFold(attr, "lib-ver"):
		lib = "lib-ver"
	default:
		return "", errSetinfoOption(string(attr))
	}
	if !validName(value) {
		return "", errSetinfoValue(lib)
	}
	return lib, ""
}
