// Package e2e holds lockproxy's end-to-end tests, and nothing else: each
// starts a real valkey-server (or redis-server, LOCKPROXY_TEST_SERVER) and a
// proxy in front of it, and checks what a client observes, often against
// the same commands sent to Valkey directly. helpers_test.go has the one
// environment builder and the helpers every test shares.
//
// Run one: go test -race -count=1 -run TestName ./e2e. Files the tests read
// (docs/, deploy/, config.example.yaml, scriptcheck/testdata/) are named
// from here, with ../.
package e2e
