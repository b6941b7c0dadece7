// Package cmdgrammar is Valkey's command grammar as Valkey itself states
// it (COMMAND DOCS: argument trees with tokens, optional, multiple and
// oneof; COMMAND INFO: flags and key specs), and a generator of command
// lines from it for cmd/fuzzgrammar.
//
// It is pure: decoded replies in, argument lists out. It opens no
// connection and reads no clock; the caller passes a seeded RNG, so a
// seed reproduces the same lines.
package cmdgrammar
