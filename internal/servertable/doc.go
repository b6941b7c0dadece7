// Package servertable loads the command table of a real server binary, for
// the tests that check lockproxy's written-out command knowledge against
// what valkey-server and redis-server say of themselves.
//
// It is for tests only (it imports package testing): lockproxy itself must
// not import it.
package servertable
