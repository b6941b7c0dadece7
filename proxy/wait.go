package proxy

import (
	"bytes"
	"strconv"
	"sync"

	"github.com/lockproxy/lockproxy/cluster"
	"github.com/lockproxy/lockproxy/commands"
	"github.com/lockproxy/lockproxy/resp"
	"github.com/lockproxy/lockproxy/rewrite"
)

// WAIT and WAITAOF. Valkey's WAIT counts the replicas that acknowledged
// the calling connection's own last write. A session's writes go over
// shared connections, and its WAIT over a new connection of its own (in
// front of a cluster, to the node of its last command; keyless commands
// stay where the session was), whose last write would be none: WAIT would
// answer at once, whatever the replicas acknowledged. So before the WAIT
// that new connection makes a write of its own that replicates and leaves
// nothing behind — a script that sets and deletes lockproxy's own key (in a
// slot of that node), replicated as one MULTI/EXEC — whose offset is past
// every write the session made there before (their replies came back
// first). Its reply is not the client's; if Valkey refused it (a user of
// the client's own not allowed that key, OOM), the WAIT's answer would
// count none of the session's writes, so the client gets an error in its
// place that says why.

// primeWaitScript sets and deletes its key: replicated, with no effect.
const primeWaitScript = "redis.call('SET', KEYS[1], '') return redis.call('DEL', KEYS[1])"

// primeWait is called once the session's own connection is opened for a
// WAIT or WAITAOF: it sends the prime, and returns the hook for the WAIT's
// reply (nil when there is no prime to send).
func (s *session) primeWait(args [][]byte) func([]byte) []byte {
	if s.ded == nil || !(commands.IDOf(args[0]) == commands.IDWait || commands.IDOf(args[0]) == commands.IDWaitAOF) {
		return nil
	}
	key := rewrite.WaitKey("wait") // one primary: any slot is on it
	if s.p.cl != nil {
		if key = s.p.waitKey(s.ded.Addr()); key == "" {
			return nil
		}
	}
	// Both replies come on this connection, the prime's first, to the
	// same reader: refused is set before the WAIT's hook reads it.
	var refused []byte
	muted := s.mute
	s.mute = true
	s.forward(resp.AppendCommandStrings(nil, "EVAL", primeWaitScript, "1", key), func(reply []byte) []byte {
		if len(reply) > 0 && reply[0] == '-' {
			refused = bytes.Clone(bytes.TrimRight(reply[1:], "\r\n"))
		}
		return reply
	})
	s.mute = muted
	return func(reply []byte) []byte {
		if refused != nil && len(reply) > 0 && reply[0] != '-' {
			return resp.AppendError(nil, errWaitUnprimed(key, string(refused)))
		}
		return reply
	}
}

// waitKey returns a key in a slot the node at addr serves, in the proxy's
// map, or "" when it serves none.
func (p *Proxy) waitKey(addr string) string {
	m := p.cl.Map()
	if m == nil {
		return ""
	}
	for slot := 0; slot < cluster.SlotCount; slot++ {
		if a, ok := m.Primary(uint16(slot)); ok && a == addr {
			return rewrite.WaitKey(slotTag(uint16(slot)))
		}
	}
	return ""
}

var slotTags struct {
	sync.Mutex
	m map[uint16]string
}

// slotTag returns a short hash tag that hashes to slot (found by trying
// numbers, once per slot).
func slotTag(slot uint16) string {
	slotTags.Lock()
	defer slotTags.Unlock()
	if t, ok := slotTags.m[slot]; ok {
		return t
	}
	if slotTags.m == nil {
		slotTags.m = map[uint16]string{}
	}
	for n := 0; ; n++ {
		t := strconv.Itoa(n)
		if cluster.Slot([]byte(t)) == slot {
			slotTags.m[slot] = t
			return t
		}
	}
}
