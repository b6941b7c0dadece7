package policy

// The words of lock policy. Each is a string type so the configuration's
// word is the value and messages can quote it; the constants list every
// accepted word.
type (
	FlushPolicy      string
	ReleaseMode      string
	SessionMode      string
	UnknownOwnerMode string
	ScriptsMode      string
	UnknownSHAMode   string
	FenceCheck       string
	FenceMark        string
	UnfencedWrites   string
)

const (
	FlushAllow  FlushPolicy = "allow"  // forward FLUSHALL/FLUSHDB
	FlushReject FlushPolicy = "reject" // refuse them: they would drop every lock unchecked

	ReleaseRewrite ReleaseMode = "rewrite" // a blind DEL becomes a token-checked delete
	ReleaseReject  ReleaseMode = "reject"  // a blind DEL is refused
	ReleaseObserve ReleaseMode = "observe" // forwarded as is, but logged and counted

	SessionConnection SessionMode = "connection"  // the owner is the client connection
	SessionClientName SessionMode = "client_name" // ... the CLIENT SETNAME name, surviving reconnects
	SessionClientAddr SessionMode = "client_addr" // ... the client's IP address
	SessionUser       SessionMode = "user"        // ... the ACL user it logged in as through lockproxy

	UnknownOwnerRefuse  UnknownOwnerMode = "refuse"  // release of a lock the proxy did not see taken is refused
	UnknownOwnerForward UnknownOwnerMode = "forward" // ... is forwarded unchanged

	ScriptsDefault ScriptsMode = ""        // decided by script class
	ScriptsReject  ScriptsMode = "reject"  // scripts touching the lock are refused
	ScriptsObserve ScriptsMode = "observe" // ... are forwarded and logged

	UnknownSHAAllow   UnknownSHAMode = "allow"
	UnknownSHAReject  UnknownSHAMode = "reject"
	UnknownSHAObserve UnknownSHAMode = "observe"

	FenceCheckCurrent FenceCheck = "current"
	FenceCheckHighest FenceCheck = "highest"

	FenceMarkLock FenceMark = "lock"
	FenceMarkKey  FenceMark = "key"

	UnfencedReject  UnfencedWrites = "reject"
	UnfencedAllow   UnfencedWrites = "allow"
	UnfencedObserve UnfencedWrites = "observe"
)

// The accepted words of each enumeration, in the order messages list them.
var (
	releaseModes   = []ReleaseMode{ReleaseRewrite, ReleaseReject, ReleaseObserve}
	sessionModes   = []SessionMode{SessionConnection, SessionClientName, SessionClientAddr, SessionUser}
	unknownOwners  = []UnknownOwnerMode{UnknownOwnerRefuse, UnknownOwnerForward}
	scriptsModes   = []ScriptsMode{ScriptsReject, ScriptsObserve} // "" is allowed too
	unknownSHAs    = []UnknownSHAMode{UnknownSHAAllow, UnknownSHAReject, UnknownSHAObserve}
	fenceChecks    = []FenceCheck{FenceCheckCurrent, FenceCheckHighest}
	fenceMarks     = []FenceMark{FenceMarkLock, FenceMarkKey}
	unfencedWrites = []UnfencedWrites{UnfencedReject, UnfencedAllow, UnfencedObserve}
)

// FlushPolicies returns the accepted words of on_flush, in the order
// messages list them.
func FlushPolicies() []FlushPolicy { return []FlushPolicy{FlushAllow, FlushReject} }
