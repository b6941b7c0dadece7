package commands

// Family is a command's family, the label of the per-command metrics: a
// handful of values derived from the command's kind, never the command's
// name, so the number of series stays bounded whatever clients send.
type Family uint8

const (
	FamForward     Family = iota // forwarded as it is on a shared connection
	FamLock                      // decided by a lock rule: rewritten, refused or observed
	FamDedicated                 // needs the client's own connection: MULTI, WATCH, blocking commands
	FamPubsub                    // subscriptions and MONITOR
	FamReplication               // SYNC, PSYNC
	FamConnection                // HELLO, SELECT, CLIENT, AUTH, QUIT, RESET
	FamAdmin                     // LOCKPROXY ..., INFO
	FamServer                    // SAVE, FLUSHALL, FLUSHDB, DEBUG, SCRIPT, FUNCTION, SHUTDOWN
	NumFamilies
)

// FamilyNames are the families' metric labels, indexed by Family. Read-only.
var FamilyNames = [NumFamilies]string{"forward", "lock", "dedicated", "pubsub", "replication", "connection", "admin", "server"}

func (f Family) String() string { return FamilyNames[f] }

// Family is the family of a command of kind k before any lock rule looked
// at it (the proxy makes it FamLock when one did).
func (k Kind) Family() Family {
	switch k {
	case Dedicated, XRead:
		return FamDedicated
	case Stream:
		return FamPubsub
	case Sync:
		return FamReplication
	case Hello, Select, Client, Auth, Quit, Reset:
		return FamConnection
	case Admin, Info:
		return FamAdmin
	case Long, Server:
		return FamServer
	}
	return FamForward
}
