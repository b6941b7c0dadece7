package clients

import "fmt"

// Every error reply this package writes, in one place: CLIENT LIST's and
// CLIENT KILL's, which the proxy answers about its own clients, a client's
// name and library info refused, and CLIENT TRACKING's REDIRECT to a
// client that does not exist. Each is
// Valkey's own text, so clients that match on it keep working; each starts
// with one upper-case code word.

const (
	errSyntax       = "ERR syntax error"
	errClientID     = "ERR Invalid client ID"
	errClientIDKill = "ERR client-id should be greater than 0"
	errNoSuchClient = "ERR No such client"
	errMaxAge       = "ERR maxage is not an integer or out of range"
	errMaxAgeRange  = "ERR maxage should be greater than 0"
	// CLIENT SETNAME's, HELLO ... SETNAME's and CLIENT SETINFO's.
	errClientName = "ERR Client names cannot contain spaces, newlines or special characters."
)

func errClientType(t string) string { return fmt.Sprintf("ERR Unknown client type '%s'", t) }

func errNoSuchUser(u string) string { return fmt.Sprintf("ERR No such user '%s'", u) }

func errSetinfoOption(opt string) string {
	return fmt.Sprintf("ERR Unrecognized option '%s'", opt)
}

func errSetinfoValue(attr string) string {
	return fmt.Sprintf("ERR %s cannot contain spaces, newlines or special characters.", attr)
}

// errTrackingNoRedirect is Valkey's reply to CLIENT TRACKING ON REDIRECT
// of an id no client has (here: no client of the proxy).
const errTrackingNoRedirect = "ERR The client ID you want redirect to does not exist"
