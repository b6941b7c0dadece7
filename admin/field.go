package admin

import (
	"fmt"
	"strconv"

	"github.com/lockproxy/lockproxy/resp"
)

// Field is one entry of a reply record. V is a string, an int64 (a RESP3
// integer, a string in RESP2), nil (null), []Field (a nested record),
// [][]Field (a list of records) or []string.
type Field struct {
	K string
	V any
}

// Encode appends a record: a map in RESP3, a flat array of names and
// values in RESP2, as Valkey's own CONFIG GET and XINFO reply.
func Encode(dst []byte, rec []Field, proto int) []byte {
	dst = resp.AppendMapHeader(dst, len(rec), proto)
	for _, f := range rec {
		dst = resp.AppendBulkString(dst, f.K)
		dst = EncodeValue(dst, f.V, proto)
	}
	return dst
}

// EncodeValue appends one value of a Field (see Field for the types); a
// list of records is an array of them. It panics on any other type: a
// handler's mistake, not a client's.
func EncodeValue(dst []byte, v any, proto int) []byte {
	switch v := v.(type) {
	case nil:
		return resp.AppendNull(dst, proto)
	case string:
		return resp.AppendBulkString(dst, v)
	case int64:
		if proto >= 3 {
			return resp.AppendInt(dst, v)
		}
		return resp.AppendBulkString(dst, strconv.FormatInt(v, 10))
	case []Field:
		return Encode(dst, v, proto)
	case [][]Field:
		dst = resp.AppendArrayHeader(dst, len(v))
		for _, r := range v {
			dst = Encode(dst, r, proto)
		}
		return dst
	case []string:
		dst = resp.AppendArrayHeader(dst, len(v))
		for _, x := range v {
			dst = resp.AppendBulkString(dst, x)
		}
		return dst
	}
	panic(fmt.Sprintf("admin: cannot encode %T", v))
}
