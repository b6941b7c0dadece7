package clients

import (
	"bytes"
	"strconv"

	"github.com/lockproxy/lockproxy/internal/valkeynum"
	"github.com/lockproxy/lockproxy/resp"
)

// Client-side caching (CLIENT TRACKING) through the proxy: what is decided
// about the command's options and the invalidations without a connection.
// Tracking is state of one connection, so a session that tracks has
// connections of its own (one per node in front of a cluster), each told
// CLIENT TRACKING with the client's options; REDIRECT names a client of the
// proxy, whom Valkey does not know, so the proxy tracks REDIRECT to a relay
// connection of its own per node (Relay) and hands the relay's pushes to
// the target (Invalidation).

// TrackingRedirect reads CLIENT TRACKING's options (args: the whole
// command) for REDIRECT, as Valkey does: each REDIRECT's id must be an
// integer (else valkeyErr: Valkey's own error is the answer) naming a
// client (found: a client of the proxy has that id; else errText, Valkey's
// text). at is the place of the last REDIRECT's id in args, 0 when none.
// Only CLIENT TRACKING ON redirects.
func TrackingRedirect(args [][]byte, found func(id int64) bool) (at int, valkeyErr bool, errText string) {
	if len(args) < 3 || !resp.EqualFold(args[2], "on") {
		return 0, false, ""
	}
	for i := 3; i+1 < len(args); i++ {
		switch {
		case resp.EqualFold(args[i], "redirect"):
			id, ok := valkeynum.String2ll(args[i+1])
			if !ok {
				return 0, true, ""
			}
			if !found(id) || id <= 0 {
				return 0, false, errTrackingNoRedirect
			}
			at = i + 1
			i++
		case resp.EqualFold(args[i], "prefix"):
			i++
		}
	}
	return at, false, ""
}

// TrackingHas reports whether CLIENT TRACKING ON (args: the whole command)
// was given the option opt (lower-case: bcast, optin, optout, noloop).
func TrackingHas(args [][]byte, opt string) bool {
	for i := 3; i < len(args); i++ {
		if resp.EqualFold(args[i], opt) {
			return true
		}
		if resp.EqualFold(args[i], "redirect") || resp.EqualFold(args[i], "prefix") {
			i++
		}
	}
	return false
}

// TrackingCommand is CLIENT TRACKING (args, as the client sent it) as a
// connection of the client's must get it: REDIRECT's id, at args[at]
// (at > 0), is relayID, that of the relay on the connection's node.
func TrackingCommand(args [][]byte, at int, relayID int64) []string {
	st := make([]string, len(args))
	for i, a := range args {
		st[i] = string(a)
	}
	if at > 0 {
		st[at] = strconv.FormatInt(relayID, 10)
	}
	return st
}

// invalidateHead is how Valkey's RESP3 invalidation push starts.
const invalidateHead = ">2\r\n$10\r\ninvalidate\r\n"

// Invalidation is an invalidation a relay received (Valkey's RESP3 push,
// `>2 invalidate keys`) as Valkey would have sent it to the redirect
// target, whose protocol is proto: the same under RESP3; under RESP2 a
// Pub/Sub message on __redis__:invalidate if the target is subscribed;
// else nil (nothing is sent), as for any other push.
func Invalidation(push []byte, proto int, subscribed bool) []byte {
	if !bytes.HasPrefix(push, []byte(invalidateHead)) {
		return nil
	}
	switch {
	case proto == 3:
		return push
	case subscribed:
		out := make([]byte, 0, len(push)+32)
		out = append(out, "*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n"...)
		return append(out, push[len(invalidateHead):]...)
	}
	return nil
}
