package commands

import (
	"strconv"
	"time"

	"github.com/lockproxy/lockproxy/keyspec"
	"github.com/lockproxy/lockproxy/resp"
)

// BlockingWait reports whether a command may block on the server, and for
// how long it asked (negative: forever). Whether it blocks is the table's
// (the "blocking" flag); where its timeout is, COMMAND does not say, so the
// commands Valkey 8 has are listed: seconds as the last argument (BLPOP,
// BRPOP, BRPOPLPUSH, BLMOVE, BZPOPMIN, BZPOPMAX), seconds first (BLMPOP,
// BZMPOP), milliseconds last (WAIT, WAITAOF), milliseconds after BLOCK
// (XREAD, XREADGROUP); any other blocking command may wait forever. DEBUG
// SLEEP holds Valkey as long as it says; SAVE, a synchronous FLUSHALL or
// FLUSHDB and DEBUG RELOAD as long as the dataset takes, which no timeout
// can tell from a hung server: Valkey is alive, so the reply is waited for.
func (c *Table) BlockingWait(args [][]byte) (time.Duration, bool) {
	var buf [24]byte
	name, ok := Lower(buf[:], args[0])
	if !ok {
		return 0, false
	}
	if len(args) < 2 {
		// SAVE, FLUSHALL and FLUSHDB alone run synchronously.
		l := string(name)
		return -1, l == "save" || l == "flushall" || l == "flushdb"
	}
	last := args[len(args)-1]
	switch string(name) {
	case "blpop", "brpop", "brpoplpush", "blmove", "bzpopmin", "bzpopmax":
		return waitFor(last, time.Second), true
	case "blmpop", "bzmpop":
		return waitFor(args[1], time.Second), true
	case "wait", "waitaof":
		return waitFor(last, time.Millisecond), true
	case "save", "flushall", "flushdb":
		return -1, !resp.EqualFold(last, "async")
	case "debug":
		switch {
		case resp.EqualFold(args[1], "sleep") && len(args) == 3:
			return waitFor(args[2], time.Second), true
		case resp.EqualFold(args[1], "reload"), resp.EqualFold(args[1], "loadaof"):
			return -1, true
		}
	case "xread", "xreadgroup":
		for i, a := range args[1 : len(args)-1] {
			if resp.EqualFold(a, "streams") {
				break
			}
			if resp.EqualFold(a, "block") {
				return waitFor(args[i+2], time.Millisecond), true
			}
		}
	default:
		if c.blocks[string(name)] && !keyspec.BlocksOnlyWithOption(string(name)) {
			return -1, true
		}
	}
	return 0, false
}

// waitFor converts a command's timeout argument; 0 means forever. An
// unreadable one is left to Valkey to refuse (no extra wait).
func waitFor(arg []byte, unit time.Duration) time.Duration {
	f, err := strconv.ParseFloat(string(arg), 64)
	if err != nil || f < 0 {
		return 0
	}
	if f == 0 {
		return -1
	}
	return time.Duration(f * float64(unit))
}
