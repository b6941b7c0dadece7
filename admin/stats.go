package admin

// STATS: the counter table's lines, and locks_held.
func (a *Admin) stats(c Conn, _ [][]byte) []byte {
	// locks_held is Valkey's: the locks of this database whose key still
	// holds a recorded grant, whichever instance granted them (read from
	// the locks' index, a round trip per 256 locks: STATS only, not INFO
	// or /metrics, which monitoring polls).
	var held any = "unknown"
	if locks, err := a.readLocks(c.DB(), nil); err == nil {
		n := int64(0)
		for i := range locks {
			if locks[i].current {
				n++
			}
		}
		held = n
	}
	lines := a.h.Stats()
	f := make([]Field, len(lines), len(lines)+1)
	for i, l := range lines {
		f[i] = Field{l.Name, l.Value}
	}
	return Encode(nil, append(f, Field{"locks_held", held}), c.Proto())
}
