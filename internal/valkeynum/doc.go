// Package valkeynum holds Valkey's own number parsing, for the places that
// must accept exactly what Valkey accepts: the proxy's connection state
// (SELECT 01 and HELLO +3 are errors in Valkey, so they change nothing
// there either), key extraction from numeric arguments, and luaeval.
//
// It must not import any other lockproxy package, so that every one of them
// can import it.
package valkeynum
