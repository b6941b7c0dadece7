package locks

import (
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockproxy/lockproxy/rewrite"
	"github.com/lockproxy/lockproxy/telemetry"
	"github.com/lockproxy/lockproxy/upstream"
)

// Host is what the lock glue needs of the proxy (the seam: proxy's
// lockhost.go implements it).
type Host interface {
	// Eval runs script in database db on a connection of its own to the
	// node that holds key, within the dial timeout, and returns its
	// integer reply (the undo scripts).
	Eval(key []byte, db int, script string, keys []string, args ...any) (int64, error)
	// Own keeps the next n commands written on nc out of MONITOR, as the
	// handshake is.
	Own(nc net.Conn, n int)
	// Contended, Granted and Released count an effect; Record puts an
	// event in the ring, the log, the counters by rule and outcome and
	// the audit file.
	Contended(e *rewrite.Effect, now time.Time)
	Granted(e *rewrite.Effect, now time.Time)
	Released(e *rewrite.Effect)
	Record(ev telemetry.Event, e *rewrite.Effect)
}

// Client is a session as the lock glue sees it.
type Client interface {
	// Addr is the client's address, Name its name now (events, logs).
	Addr() string
	Name() string
	// Grants are the grants the session was given (grants.go).
	Grants() *Grants
}

// Keeper keeps what this instance knows about locks beyond one command:
// the epoch memory and the clue the grants mint under (epoch.go), the
// undoing of grants off the reply path (durable.go), and the counts of
// both.
type Keeper struct {
	host     Host
	log      *slog.Logger
	wg       *sync.WaitGroup
	sentinel *upstream.Sentinel
	// Clue is the epoch clue passed to the grants (rewrite.Decider.Epoch).
	Clue   rewrite.EpochClue
	epochs epochMemory
	// Undone counts grants undone because their replicas did not
	// acknowledge them in time; Short the renewals, fenced writes and
	// scripts answered NOTDURABLE; Lost the grants found lost in a change
	// of primary (grants.go).
	Undone, Short, Lost atomic.Int64
}

// New returns a Keeper working through h; the undo goroutines join wg;
// sentinel is nil without Sentinel (its config epoch is the epoch's floor).
func New(h Host, log *slog.Logger, wg *sync.WaitGroup, sentinel *upstream.Sentinel) *Keeper {
	return &Keeper{host: h, log: log, wg: wg, sentinel: sentinel, epochs: epochMemory{prev: -1}}
}
