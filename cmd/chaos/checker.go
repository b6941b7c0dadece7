package main

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Op is one command a worker sent and what came back, as the worker saw it.
// Times are wall-clock Unix nanoseconds on the one host every process of a
// run shares (Valkey's expiry clock is the same clock).
type Op struct {
	W    int    `json:"w"`           // worker number
	G    int    `json:"g"`           // grant number within the worker (its n-th critical section)
	Kind string `json:"k"`           // see the kind constants
	Lock string `json:"l,omitempty"` // the lock's base name, e.g. "c0"
	Arg  string `json:"a,omitempty"` // the value sent: lock value, resource entry, probe payload
	Want string `json:"x,omitempty"` // for probes: the exact reply expected
	// Reply is the raw reply (cut to 200 bytes), or "!cut ..." when the
	// connection broke before it came, or "!timeout" when none came within
	// the worker's reply wait while the connection stayed open.
	Reply string `json:"r"`
	S     int64  `json:"s"`               // just before the command was written
	R     int64  `json:"e"`               // just after its reply was read
	Lease int64  `json:"lease,omitempty"` // acquire: the lease asked, in ms
}

const (
	kindAcquire = "acquire" // SET {l}:lock value NX PX lease
	kindToken   = "token"   // LOCKPROXY FENCE {l}:lock, or INCR {l}:fence without the proxy
	kindWrite   = "write"   // RPUSH {l}:items entry — the guarded resource
	kindRelease = "release" // DEL {l}:lock — a blind delete
	kindEcho    = "echo"    // ECHO unique-payload
	kindSet     = "set"     // SET chaos:w<n> unique-payload
	kindGet     = "get"     // GET chaos:w<n>, right after the SET
	kindStall   = "stall"   // not a command: the worker slept past its lease (S..R)
)

const (
	replyCut     = "!cut"
	replyTimeout = "!timeout"
)

// Entry is one accepted write, as the resource (the list {l}:items) holds it.
type Entry struct {
	Tok  int64
	W, G int
	Op   string
	T    int64
}

func formatEntry(tok int64, w, g int, op string, t int64) string {
	return fmt.Sprintf("tok=%d w=%d g=%d op=%s t=%d", tok, w, g, op, t)
}

func parseEntry(s string) (Entry, error) {
	var e Entry
	_, err := fmt.Sscanf(s, "tok=%d w=%d g=%d op=%s t=%d", &e.Tok, &e.W, &e.G, &e.Op, &e.T)
	return e, err
}

// Totals is the checker's verdict on one run. The first group are
// violations; the rest describe the run.
type Totals struct {
	Mode string `json:"mode"`

	SuccessorDeleted int `json:"successor_locks_deleted"`
	StaleAccepted    int `json:"stale_writes_accepted"`
	Overlaps         int `json:"overlapping_critical_sections"`
	Lost             int `json:"replies_lost"`
	Misrouted        int `json:"replies_misrouted"`
	// ReusedTokens counts fencing tokens handed out for more than one
	// grant of a lock (issue 29): a token the grant's holder learnt
	// (LOCKPROXY FENCE, or INCR of the counter without the proxy) that an
	// earlier grant of the same lock had learnt already.
	ReusedTokens int `json:"reused_tokens"`
	// HolderRefused counts a holder's release, token or write refused (or a
	// release that deleted nothing, or no token) whose reply came while its
	// lease certainly still ran. A violation only when owners are portable
	// (PortableOwners: session client_name across instances); with
	// session: connection a holder whose connection was cut by a proxy
	// restart is a stranger on its new one, as documented.
	HolderRefused  int  `json:"holders_refused"`
	PortableOwners bool `json:"portable_owners"`
	Instances      int  `json:"instances"`
	Scripts        bool `json:"scripts"` // -scripts: the lock library's scripts

	Grants          int `json:"grants"`
	Contended       int `json:"acquire_attempts_refused"`
	Writes          int `json:"writes_accepted"`
	WritesRefused   int `json:"writes_refused"`
	Releases        int `json:"releases_deleted"`
	ReleasesNoop    int `json:"releases_deleted_nothing"`
	ReleasesRefused int `json:"releases_refused"`
	Cut             int `json:"commands_cut"`
	UpstreamErrors  int `json:"upstream_errors"`
	WallOverlaps    int `json:"wall_clock_overlaps"`
	Commands        int `json:"commands"`

	Stops          int `json:"worker_sigstops"`
	Stalls         int `json:"worker_stalls"`
	ProxyRestarts  int `json:"proxy_restarts"`
	ProxyKills     int `json:"proxy_kills"`
	ValkeyRestarts int `json:"valkey_restarts"`
	// In front of a cluster (-cluster): CLUSTER FAILOVERs on a replica, and
	// primaries stopped with SIGSTOP for a moment.
	Cluster   bool `json:"cluster,omitempty"`
	Failovers int  `json:"cluster_failovers"`
	// -cluster -lose-writes and -sentinel: primaries killed while their
	// replica was cut off, the replica promoted (by Sentinel with Sentinel).
	LossyFailovers int  `json:"lossy_failovers"`
	Sentinel       bool `json:"sentinel,omitempty"`
	PrimaryStops   int  `json:"primary_sigstops"`

	// Examples of each violation, for the report.
	Examples []string `json:"examples,omitempty"`
}

// Violations is the sum of the counts that must be 0 with lockproxy.
func (t Totals) Violations() int {
	n := t.SuccessorDeleted + t.StaleAccepted + t.Overlaps + t.Lost + t.Misrouted + t.ReusedTokens
	if t.PortableOwners {
		n += t.HolderRefused
	}
	return n
}

// setPortable says whether the run's owners are portable (see
// HolderRefused); when they are not, refused holders are information only
// and their examples are dropped.
func (t *Totals) setPortable(portable bool) {
	t.PortableOwners = portable
	if portable {
		return
	}
	kept := t.Examples[:0]
	for _, e := range t.Examples {
		if !strings.HasPrefix(e, holderRefused+":") {
			kept = append(kept, e)
		}
	}
	t.Examples = kept
}

const holderRefused = "holder refused"

// example keeps up to 3 examples of each kind of finding (the text up to
// the first colon).
func (t *Totals) example(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	kind, _, _ := strings.Cut(s, ":")
	n := 0
	for _, e := range t.Examples {
		if strings.HasPrefix(e, kind+":") {
			n++
		}
	}
	if n < 3 {
		t.Examples = append(t.Examples, s)
	}
}

// expiryMargin is added to a lease before a lock is taken as certainly
// expired: Valkey keeps expiry in milliseconds.
const expiryMargin = 5 * time.Millisecond

// allowedErrors are the error codes each kind of command may get. Any other
// error is a reply that cannot belong to the command: misrouted.
// In a cluster every keyed command may also meet CLUSTERDOWN (no primary
// serves the slot, during a failover) or TRYAGAIN (the slot is moving); both
// say the command did not run. MOVED and ASK never may: a redirect reaching
// the client is a leak. An acquisition by a script (-scripts) may be
// answered NOTDURABLE under -durability (a script has no "not taken" of
// its own) and LOCKDELAY under -max-lease (redislock's obtain, finding
// the lock absent after its SET NX was answered as for a held lock, sets
// it without NX, which has no "not taken" either): both say the lock was
// not taken.
var allowedErrors = map[string][]string{
	kindAcquire: {"UPSTREAM", "SHUTDOWN", "LOADING", "CLUSTERDOWN", "TRYAGAIN", "NOTDURABLE", "LOCKDELAY"},
	kindToken:   {"UPSTREAM", "SHUTDOWN", "LOADING", "CLUSTERDOWN", "TRYAGAIN"},
	kindWrite:   {"UPSTREAM", "SHUTDOWN", "LOADING", "CLUSTERDOWN", "TRYAGAIN", "STALE", "UNFENCED", "NOTDURABLE"},
	kindRelease: {"UPSTREAM", "SHUTDOWN", "LOADING", "CLUSTERDOWN", "TRYAGAIN", "NOTOWNER", "TOKENRELEASE"},
	kindEcho:    {"UPSTREAM", "SHUTDOWN", "LOADING"},
	kindSet:     {"UPSTREAM", "SHUTDOWN", "LOADING", "CLUSTERDOWN", "TRYAGAIN"},
	kindGet:     {"UPSTREAM", "SHUTDOWN", "LOADING", "CLUSTERDOWN", "TRYAGAIN"},
}

func errCode(reply string) string {
	f := strings.Fields(strings.TrimPrefix(reply, "-"))
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

func isNil(reply string) bool { return reply == "$-1\r\n" || reply == "_\r\n" }
func isInt(reply string) bool {
	return strings.HasPrefix(reply, ":") && strings.HasSuffix(reply, "\r\n")
}

// wellFormed reports whether reply can be the reply to op: the shape (and
// for probes the exact value) its command produces.
func wellFormed(op Op) bool {
	r := op.Reply
	if strings.HasPrefix(r, "-") {
		code := errCode(r)
		for _, c := range allowedErrors[op.Kind] {
			if code == c {
				return true
			}
		}
		return false
	}
	switch op.Kind {
	case kindAcquire:
		return r == "+OK\r\n" || isNil(r)
	case kindToken:
		return isInt(r) || isNil(r)
	case kindWrite, kindRelease:
		return isInt(r)
	case kindSet:
		return r == "+OK\r\n"
	case kindEcho, kindGet:
		return r == op.Want
	}
	return false
}

// Check reads the workers' histories and the resource and counts:
//
//   - successor locks deleted: a blind DEL that returned 1 although it was
//     sent after its own lock had certainly expired (later than the
//     acquiring SET's reply + lease + 5 ms). The key it deleted can only
//     have been another worker's lock.
//   - stale writes accepted: an entry in a resource list whose fencing
//     token is lower than that of an entry accepted before it.
//   - overlapping critical sections observed at the resource: grants whose
//     accepted writes (enter ... exit) have another grant's accepted write
//     between them in the resource list.
//   - replies lost: commands with no reply within the wait while their
//     connection stayed open.
//   - replies misrouted: replies of the wrong shape for their command, an
//     error code the command cannot produce, or a probe (ECHO, GET of the
//     worker's own key) answered with anything but its own payload.
func Check(mode string, ops []Op, resource map[string][]string) Totals {
	t := Totals{Mode: mode}
	type gid struct{ w, g int }
	acquired := map[gid]Op{}
	for _, op := range ops {
		if op.Kind == kindAcquire && op.Reply == "+OK\r\n" {
			acquired[gid{op.W, op.G}] = op
		}
	}
	type lockToken struct {
		lock, token string
	}
	tokenOf := map[lockToken]gid{}
	for _, op := range ops {
		if op.Kind != kindToken || !isInt(op.Reply) || op.Reply == ":0\r\n" {
			continue
		}
		k, g := lockToken{op.Lock, op.Reply}, gid{op.W, op.G}
		if first, ok := tokenOf[k]; ok && first != g {
			t.ReusedTokens++
			t.example("token reused: lock %s token %s learnt by worker %d grant %d, and before by worker %d grant %d",
				op.Lock, strings.TrimSpace(strings.TrimPrefix(op.Reply, ":")), op.W, op.G, first.w, first.g)
			continue
		}
		tokenOf[k] = g
	}
	for _, op := range ops {
		if op.Kind == kindStall {
			t.Stalls++
			continue
		}
		t.Commands++
		switch {
		case strings.HasPrefix(op.Reply, replyCut):
			t.Cut++
			continue
		case op.Reply == replyTimeout:
			t.Lost++
			t.example("reply lost: worker %d %s %q sent at %s, no reply", op.W, op.Kind, op.Arg, stamp(op.S))
			continue
		case !wellFormed(op):
			t.Misrouted++
			t.example("reply misrouted: worker %d %s %q got %q", op.W, op.Kind, op.Arg, op.Reply)
			continue
		case errCode(op.Reply) == "UPSTREAM" || errCode(op.Reply) == "SHUTDOWN" ||
			errCode(op.Reply) == "CLUSTERDOWN" || errCode(op.Reply) == "TRYAGAIN":
			t.UpstreamErrors++
		}
		if a, ok := acquired[gid{op.W, op.G}]; ok && certainlyHeld(a, op) && refusedHolder(op) {
			t.HolderRefused++
			t.example(holderRefused+": worker %d grant %d (lease %d ms, asked at %s) %s %q got %q at %s, while its lease certainly ran",
				op.W, op.G, a.Lease, stamp(a.S), op.Kind, op.Arg, op.Reply, stamp(op.R))
		}
		switch op.Kind {
		case kindAcquire:
			if op.Reply == "+OK\r\n" {
				t.Grants++
			} else if isNil(op.Reply) {
				t.Contended++
			}
		case kindWrite:
			if strings.HasPrefix(op.Reply, "-STALE") || strings.HasPrefix(op.Reply, "-UNFENCED") {
				t.WritesRefused++
			}
		case kindRelease:
			switch {
			case op.Reply == ":1\r\n":
				t.Releases++
				a, ok := acquired[gid{op.W, op.G}]
				if ok && op.S > a.R+(time.Duration(a.Lease)*time.Millisecond+expiryMargin).Nanoseconds() {
					t.SuccessorDeleted++
					t.example("successor lock deleted: worker %d grant %d (lease %d ms, granted by %s) sent DEL at %s, %v after the grant; it returned 1",
						op.W, op.G, a.Lease, stamp(a.R), stamp(op.S), time.Duration(op.S-a.R).Round(time.Millisecond))
				}
			case op.Reply == ":0\r\n":
				t.ReleasesNoop++
			case strings.HasPrefix(op.Reply, "-"):
				if c := errCode(op.Reply); c == "NOTOWNER" || c == "TOKENRELEASE" {
					t.ReleasesRefused++
				}
			}
		}
	}

	locks := make([]string, 0, len(resource))
	for l := range resource {
		locks = append(locks, l)
	}
	sort.Strings(locks)
	for _, l := range locks {
		var entries []Entry
		for _, s := range resource[l] {
			e, err := parseEntry(s)
			if err != nil {
				t.Misrouted++
				t.example("reply misrouted: resource %s holds an entry no worker wrote: %q", l, s)
				continue
			}
			entries = append(entries, e)
		}
		t.Writes += len(entries)
		var high int64 = -1
		var highAt Entry
		for _, e := range entries {
			if e.Tok < high {
				t.StaleAccepted++
				t.example("stale write accepted: at %s, token %d (worker %d grant %d %s) after token %d (worker %d grant %d)",
					l, e.Tok, e.W, e.G, e.Op, high, highAt.W, highAt.G)
			}
			if e.Tok > high {
				high, highAt = e.Tok, e
			}
		}
		// Overlaps: the span of each grant's entries in list order.
		first, last := map[gid]int{}, map[gid]int{}
		for i, e := range entries {
			id := gid{e.W, e.G}
			if _, ok := first[id]; !ok {
				first[id] = i
			}
			last[id] = i
		}
		ids := make([]gid, 0, len(first))
		for id := range first {
			ids = append(ids, id)
		}
		sort.Slice(ids, func(i, j int) bool { return first[ids[i]] < first[ids[j]] })
		for _, id := range ids {
			for i := first[id] + 1; i < last[id]; i++ {
				if o := (gid{entries[i].W, entries[i].G}); o != id {
					t.Overlaps++
					t.example("critical sections overlap: at %s, worker %d grant %d (token %d) wrote between entries %d and %d of worker %d grant %d (token %d)",
						l, o.w, o.g, entries[i].Tok, first[id], last[id], id.w, id.g, entries[first[id]].Tok)
					break
				}
			}
		}
	}
	t.WallOverlaps = wallOverlaps(ops)
	return t
}

// certainlyHeld reports whether op's reply came before its grant's lease
// could have ended: Valkey set the expiry after the acquiring SET was
// sent, so the lock lives at least until then + lease (less the margin of
// its millisecond clock).
func certainlyHeld(acquire, op Op) bool {
	return op.R < acquire.S+(time.Duration(acquire.Lease)*time.Millisecond-expiryMargin).Nanoseconds()
}

// refusedHolder reports whether op's reply is one a holder must not get:
// its release refused or deleting nothing, no fencing token, its write
// refused.
func refusedHolder(op Op) bool {
	switch op.Kind {
	case kindRelease:
		return op.Reply == ":0\r\n" || strings.HasPrefix(op.Reply, "-NOTOWNER") || strings.HasPrefix(op.Reply, "-TOKENRELEASE")
	case kindToken:
		return isNil(op.Reply)
	case kindWrite:
		return strings.HasPrefix(op.Reply, "-STALE") || strings.HasPrefix(op.Reply, "-UNFENCED")
	}
	return false
}

// wallOverlaps counts pairs of grants of the same lock whose holders
// believed they held it at the same time: from the acquire's reply to the
// release being sent. Information only: pauses make this happen with or
// without the proxy; fencing is what keeps it from reaching the resource.
func wallOverlaps(ops []Op) int {
	type span struct {
		from, to int64
	}
	type gid struct{ w, g int }
	start := map[gid]Op{}
	spans := map[string][]span{}
	for _, op := range ops {
		id := gid{op.W, op.G}
		switch {
		case op.Kind == kindAcquire && op.Reply == "+OK\r\n":
			start[id] = op
		case op.Kind == kindRelease:
			if a, ok := start[id]; ok {
				spans[a.Lock] = append(spans[a.Lock], span{a.R, op.S})
				delete(start, id)
			}
		}
	}
	n := 0
	for _, ss := range spans {
		sort.Slice(ss, func(i, j int) bool { return ss[i].from < ss[j].from })
		var maxTo int64
		for i, s := range ss {
			if i > 0 && s.from < maxTo {
				n++
			}
			maxTo = max(maxTo, s.to)
		}
	}
	return n
}

func stamp(ns int64) string {
	return time.Unix(0, ns).Format("15:04:05.000")
}
