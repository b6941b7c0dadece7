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

// Shape says how the script's reply becomes the client's reply (see Fold).
type Shape uint8

const (
	// AsIs: the reply is the command's own (a forwarded command).
	AsIs Shape = iota
	// AcquireReply: SET ... NX's reply, +OK or nil, from the Acquire
	// script's {grant, reply}.
	AcquireReply
	// AcquireGetReply: SET ... NX GET's reply, the old value or nil.
	AcquireGetReply
	// SetNXReply: SETNX's :1 or :0.
	SetNXReply
	// ReleaseReply: DEL's count of deleted keys, from the Release script.
	ReleaseReply
	// HolderReply: the command's own reply, from the Holder script.
	HolderReply
	// FencedReply: the command's own reply, from the Fenced script.
	FencedReply
	// ScriptReply: the reply of a client's script run in its wrapper:
	// the script's own (lockproxy's refusals worded).
	ScriptReply
)

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
	// Learn, when set, is called with the command's reply once Valkey has
	// answered it (for a queued command: with its element of EXEC's
	// reply), with whether Valkey accepted it: the script cache learns a
	// FUNCTION LOAD, DELETE, FLUSH or RESTORE only then.
	Learn func(accepted bool)
	// Verb, when set, is the client's spelling of EVAL or EVALSHA: a Run
	// sends EVAL or EVALSHA spelled in its letter case, as Valkey's
	// MONITOR would show the client's own command.
	Verb []byte
	// Clue is where in Args a grant's epoch clue "known" is (EpochClue),
	// 0 when the plan mints no token: in front of a cluster the proxy
	// sets it again once it reached the node (EpochClue.Known).
	Clue int
	// Durable, for a client's script under the monitor: the strictest
	// durability among the rules of the locks it declares and of the
	// locks that guard the keys it writes (nil: answered at once).
	// DurableLocks: per declared lock under a durability rule, its key,
	// counter, records key and the client's owner under its rule: what an
	// acquisition its replicas did not acknowledge is undone on.
	Durable      *policy.DurabilityConfig
	DurableLocks [][]byte
}

// EffectKind says what to record once the reply is known.
type EffectKind uint8

const (
	// Grant: an acquisition; Fold sets Grant to the number minted (0 when
	// the lock was not taken).
	Grant EffectKind = iota + 1
	// Released: a lock key of a DEL/UNLINK; Fold sets Outcome, Holder,
	// Held and Lapsed.
	Released
	// Renewed: a holder's lease change; Fold sets Acted (false: the
	// owner's grant was superseded, nothing changed).
	Renewed
	// SetValue: the holder's SET of its own lock; Fold sets Acted.
	SetValue
	// Observed: a risky command was forwarded (release: observe).
	Observed
	// Refused: the command was refused; Reason is the error. Fold turns
	// the other kinds into Refused when the script refused them.
	Refused
	// Flushed: FLUSHALL/FLUSHDB/SWAPDB went through and dropped every lock
	// (and its records) of a database.
	Flushed
	// FencedWrite: a write to a guarded key ran in the Fenced script; Fold
	// sets Grant to the token it was checked with (0: the writer held no
	// grant, and unfenced_writes let it through) and turns an UNFENCED
	// refusal into Refused. A STALE refusal, worded by the script itself,
	// passes unchanged (the proxy counts it from the reply).
	FencedWrite
)

// Outcome is what the Release script did with one lock key.
type Outcome uint8

const (
	// OutcomeNone: not known (the reply did not say).
	OutcomeNone Outcome = iota
	// OutcomeReleased: the caller held the lock; it was deleted.
	OutcomeReleased
	// OutcomeSuperseded: the caller's grant was superseded; not deleted.
	OutcomeSuperseded
	// OutcomeForwarded: deleted as asked, unchecked (release: observe, or
	// unknown_owner: forward for a caller without a record).
	OutcomeForwarded
)

// Effect is one thing to record about a lock key. Its byte slices are
// copies: they outlive the command. The fields after Reason are the
// script's answer, written by Fold.
type Effect struct {
	Kind    EffectKind
	Command string
	Key     []byte
	Rule    *policy.Rule
	Owner   string
	Value   []byte
	Plain   int // plain keys in the same DEL (the reply counts them too)
	Reason  string

	Grant int64
	// Holder is the owner whose grant the key held when the script ran,
	// when that is not Owner ("" if none): for a forwarded delete, the
	// owner whose lock it removed.
	Holder  string
	Outcome Outcome
	Held    time.Duration // since the released grant; -1 without a record
	Lapsed  bool          // the released grant's lease had run out
	Acted   bool          // Holder script: the command ran
	// ValueLen is the released token's length; Value then holds its first
	// three bytes only (all the audit shows of it).
	ValueLen int
	// Unfenced: a FencedWrite from a writer holding no grant, let through.
	Unfenced bool
}
