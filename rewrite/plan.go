package rewrite

import (
	"time"

	"github.com/lockproxy/lockproxy/policy"
)

// Kind is what the proxy does with a command.
type Kind uint8

const (
	// Forward: send the command as it came (the zero Plan).
	Forward Kind = iota
	// Run: send Script with Keys and Args instead of the command.
	Run
	// Refuse: answer Err to the client; send nothing.
	Refuse
	// NeedKeys: the key specs cannot tell which keys the command touches;
	// ask Valkey (COMMAND GETKEYSANDFLAGS) and call DecideKeys.
	NeedKeys
)

// Shape says how the script's reply becomes the client's reply.
type Shape uint8

const (
	// AsIs: the script already answers as the command would.
	AsIs Shape = iota
	// AcquireReply: an integer (the grant number) becomes +OK, a nil stays
	// a nil: the client sees exactly SET ... NX's reply.
	AcquireReply
	// SetNXReply: an integer (the grant number) becomes :1, a nil :0:
	// SETNX's reply.
	SetNXReply
)

// Reply turns a script's reply into the reply of the command it replaced,
// for a client speaking protocol proto. Errors pass unchanged. (A script's
// false reaches RESP3 clients as a null, not as boolean false: lockproxy's
// scripts run with RESP2 conversion, so AsIs needs no mapping.)
func (s Shape) Reply(reply []byte, proto int) []byte {
	if len(reply) == 0 || reply[0] == '-' {
		return reply
	}
	switch s {
	case AcquireReply:
		if reply[0] == ':' {
			return replyOK
		}
		if proto >= 3 {
			return replyNull3
		}
		return replyNull2
	case SetNXReply:
		if reply[0] == ':' {
			return replyOne
		}
		return replyZero
	}
	return reply
}

// The replies Reply makes, shared: every acquisition answers one of them.
// Capacity equals length, so an append to one copies it first; callers
// never write into a reply.
var (
	replyOK    = fixed("+OK\r\n")
	replyNull2 = fixed("$-1\r\n")
	replyNull3 = fixed("_\r\n")
	replyOne   = fixed(":1\r\n")
	replyZero  = fixed(":0\r\n")
)

func fixed(s string) []byte { b := []byte(s); return b[:len(b):len(b)] }

// Plan is the decision for one command. Keys and Args may alias the
// command's arguments: encode them before reading the next command.
type Plan struct {
	Kind    Kind
	Script  *Script
	Keys    [][]byte
	Args    [][]byte
	Shape   Shape
	Err     string
	Effects []Effect
}

// EffectKind says what to record once the reply is known.
type EffectKind uint8

const (
	// Grant: an integer reply is a new grant of Key to Owner with Value.
	Grant EffectKind = iota + 1
	// Released: Owner's grant of Key is over (released, or not Owner's any
	// more); the reply says how many keys were deleted.
	Released
	// Renewed: a holder's lease change ran token-checked.
	Renewed
	// SetValue: the holder overwrote its own lock; on +OK its value is Value.
	SetValue
	// Observed: a risky command was forwarded (release: observe or
	// unknown_owner: forward); when it deletes a lock Holder was granted,
	// that is a successor deletion.
	Observed
	// Refused: the command was refused; Reason is the error.
	Refused
	// Flushed: FLUSHALL/FLUSHDB went through and dropped every lock.
	Flushed
	// FencedWrite: a write to a guarded key ran with the fencing check; an
	// error reply starting with STALE means it was refused.
	FencedWrite
	// Unfenced: a write to a guarded key from a client holding no grant of
	// its lock (forwarded under unfenced_writes: observe).
	Unfenced
)

// Effect is one thing to record about a lock key. Its byte slices are
// copies: they outlive the command.
type Effect struct {
	Kind    EffectKind
	Command string
	Key     []byte
	Rule    *policy.Rule
	Owner   string
	// Holder is another owner with a live grant of Key when the decision was
	// made ("" if none): a delete that succeeds then removes its lock.
	Holder string
	Value  []byte
	Grant  int64
	Lease  time.Duration // PX/EX of the acquisition
	At     time.Time     // PXAT/EXAT of the acquisition
	Plain  int           // plain keys in the same DEL (the reply counts them too)
	Reason string
}
