package cluster

import "github.com/lockproxy/lockproxy/resp"

// A cluster node that loses a slot (resharding, failover) tells each client
// subscribed to a shard channel of that slot with an sunsubscribe message
// the client never asked for. These read and write that message.

// SUnsubscribed returns the channel of an sunsubscribe message (a RESP2
// array or a RESP3 push); ok is false for any other frame.
func SUnsubscribed(b []byte) (ch string, ok bool) {
	if len(b) == 0 || (b[0] != '*' && b[0] != '>') {
		return "", false
	}
	v, n, err := resp.Parse(b)
	if err != nil || n != len(b) || len(v.Elems) != 3 || !resp.EqualFold(v.Elems[0].Str, "sunsubscribe") || v.Elems[1].Null {
		return "", false
	}
	return string(v.Elems[1].Str), true
}

// AppendSUnsubscribed encodes Valkey's sunsubscribe message for ch, with
// left shard channels left: an array in RESP2, a push in RESP3.
func AppendSUnsubscribed(dst []byte, proto int, ch string, left int) []byte {
	if proto >= 3 {
		dst = append(dst, ">3\r\n"...)
	} else {
		dst = append(dst, "*3\r\n"...)
	}
	dst = resp.AppendBulk(dst, []byte("sunsubscribe"))
	dst = resp.AppendBulk(dst, []byte(ch))
	return resp.AppendInt(dst, int64(left))
}
