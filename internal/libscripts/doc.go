// Package libscripts holds the Lua scripts of the lock libraries that take
// their locks inside scripts, as lockproxy's benchmarks and chaos test send
// them: one copy, so that what is measured and what is chaos-tested is the
// same text.
//
// They are the clients' scripts, not lockproxy's: the proxy must not import
// this package (its own scripts are in package rewrite).
package libscripts
