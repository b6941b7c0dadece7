package rewrite

import "fmt"

// The errors a client gets for a script, next to those in errors.go. One
// code word, then what happened and what to do:
//
//	NOSCRIPT  an EVALSHA of a script lockproxy has not seen: clients that
//	          fall back to EVAL on NOSCRIPT then send the body, which runs
//	          under the monitor
//	ERR       an FCALL of a function whose library carries no monitor
//	          (loaded around lockproxy), or of a monitored registration's
//	          own name
//
// The monitor's own refusals (NOTOWNER, LOCKED, STALE, UNFENCED) are
// worded in monitor.lua.

// errFencedBlocking: a blocking command that writes a guarded key (the
// fence check cannot wait).
func errFencedBlocking(cmd string, key []byte) string {
	return fmt.Sprintf("LOCKED lockproxy refused %s: it writes %s, a key a lock guards, and the fence check that write must pass runs it where it cannot block (it would answer at once instead of waiting); use the command's non-blocking form (LPOP for BLPOP, XREADGROUP without BLOCK, ...) and retry, holding the lock",
		cmd, quoteKey(key))
}

func errUnseenSHA(sha []byte) string {
	return fmt.Sprintf("NOSCRIPT lockproxy has not seen script %s, so it cannot run it under its monitor; send the script with EVAL or SCRIPT LOAD through lockproxy", quoteKey(sha))
}

func errFcallOwnName(name []byte) string {
	return fmt.Sprintf("ERR lockproxy refused FCALL of %q: a name ending in %s is the registration of a monitored library's function that lockproxy calls itself, with its own arguments; call the function by its own name", name, fnSuffix)
}

func errFcallUnmonitored(fn string) string {
	return fmt.Sprintf("ERR Function not found, or its library was loaded around lockproxy, without lockproxy's monitor inside (FUNCTION LOAD or RESTORE sent to Valkey directly): lockproxy runs a function only under its monitor; load the library again through lockproxy with FUNCTION LOAD REPLACE (function %q)", fn)
}

// errRestoreUnread: a FUNCTION RESTORE payload with a right checksum that
// lockproxy cannot read, so cannot put its monitor into.
const errRestoreUnread = "ERR lockproxy refused FUNCTION RESTORE: its payload has a right checksum but is not one lockproxy can read (libraries' code as FUNCTION DUMP writes it), so it cannot put its monitor into the libraries; load each library with FUNCTION LOAD through lockproxy"
