// Package valkeytest starts a real valkey-server (or redis-server) for tests.
//
// Tests in this repository talk to a real server, never to a mock: each
// server runs on a free loopback port with persistence off and is stopped
// when the test ends. Set LOCKPROXY_TEST_SERVER=redis-server to run the
// same tests against Redis.
//
// It is for tests and test tools (cmd/chaos, cmd/fuzzgrammar) only: lockproxy itself
// (cmd/lockproxy and the packages it imports) must not import it.
package valkeytest
