package proxy

// family is a command's family, the label of the per-command metrics: a
// handful of values derived from the command's kind (classify.go), never
// the command's name, so the number of series stays bounded whatever
// clients send.
type family uint8

const (
	famForward     family = iota // forwarded as it is on a shared connection
	famLock                      // decided by a lock rule: rewritten, refused or observed
	famDedicated                 // needs the client's own connection: MULTI, WATCH, blocking commands
	famPubsub                    // subscriptions and MONITOR
	famReplication               // SYNC, PSYNC
	famConnection                // HELLO, SELECT, CLIENT, AUTH, QUIT, RESET
	famAdmin                     // LOCKPROXY ..., INFO
	famServer                    // SAVE, FLUSHALL, FLUSHDB, DEBUG, SCRIPT, FUNCTION, SHUTDOWN
	numFamilies
)

var familyNames = [numFamilies]string{"forward", "lock", "dedicated", "pubsub", "replication", "connection", "admin", "server"}

func (f family) String() string { return familyNames[f] }

// familyOf is the family of a command of kind k before any lock rule looked
// at it (lockplan.go makes it famLock).
func familyOf(k kind) family {
	switch k {
	case kDedicated, kXRead:
		return famDedicated
	case kStream:
		return famPubsub
	case kSync:
		return famReplication
	case kHello, kSelect, kClient, kAuth, kQuit, kReset:
		return famConnection
	case kAdmin, kInfo:
		return famAdmin
	case kLong, kServer:
		return famServer
	}
	return famForward
}
