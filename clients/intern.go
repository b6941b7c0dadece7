package clients

import (
	"sync"
	"sync/atomic"
)

// Intern is a command's full name as Valkey shows it in CLIENT LIST's cmd
// (client|list for a subcommand), lower-case, shared by every client that
// sends it. At most maxInterned names are kept: a name first sent after
// them, or longer than any command's, reads "NULL". containers are the
// commands whose name includes the subcommand, lower-case.
func Intern(args [][]byte, containers map[string]bool) *string {
	var buf [48]byte
	name, ok := lower(buf[:24], args[0])
	if !ok {
		return &unknownCmd
	}
	if len(args) > 1 && containers[string(name)] {
		if sub, ok := lower(buf[len(name)+1:], args[1]); ok {
			buf[len(name)] = '|'
			name = buf[:len(name)+1+len(sub)]
		}
	}
	if v, ok := interned.Load(string(name)); ok {
		return v.(*string)
	}
	if internedN.Add(1) > maxInterned {
		return &unknownCmd
	}
	n := string(name)
	v, _ := interned.LoadOrStore(n, &n)
	return v.(*string)
}

var (
	interned   sync.Map
	internedN  atomic.Int64
	unknownCmd = "NULL"
)

const maxInterned = 4096

// lower copies b lower-cased into buf and returns it; ok is false when b
// does not fit (no command name is that long).
func lower(buf []byte, b []byte) ([]byte, bool) {
	if len(b) > len(buf) {
		return nil, false
	}
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[i] = c
	}
	return buf[:len(b)], true
}
