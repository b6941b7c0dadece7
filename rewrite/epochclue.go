package rewrite

import (
	"strconv"
	"sync/atomic"
)

// EpochClue is what the proxy knows of the primary's epoch, for the grant
// rule (fnGrant) to establish it lazily, at a lock's first grant in its
// database since the primary changed (docs/failover.md): the run id of the
// Valkey process the proxy's connections reach, and the highest epoch a new
// establishment must exceed (epochs used on other runs, epochs a flush
// emptied, Sentinel's floor less one; -1 when nothing is known). The proxy
// learns them with read-only commands and from the tokens it hands out;
// nothing is written to Valkey to learn them.
type EpochClue struct {
	v atomic.Pointer[epochArgs]
}

type epochArgs struct{ run, known []byte }

var noEpochArgs = &epochArgs{run: []byte{}, known: []byte("-1")}

// Set records the run id and the epoch to exceed.
func (c *EpochClue) Set(run string, known int64) {
	c.v.Store(&epochArgs{run: []byte(run), known: strconv.AppendInt(nil, known, 10)})
}

// Known is the epoch to exceed as the scripts take it.
func (c *EpochClue) Known() []byte {
	_, known := c.args()
	return known
}

// args are the run id and the epoch to exceed as the scripts take them
// (run "": unknown, and then the grant mints under whatever the hash says
// and writes nothing).
func (c *EpochClue) args() (run, known []byte) {
	a := noEpochArgs
	if c != nil {
		if p := c.v.Load(); p != nil {
			a = p
		}
	}
	return a.run, a.known
}
