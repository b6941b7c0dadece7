package rewrite

// CounterKey names the grant counter of a lock key: the key with a suffix,
// kept in the lock's hash slot so the acquire script may touch both in a
// cluster. A key with a hash tag keeps it (the suffix comes after it, and
// one more '}' before the suffix when the key ends in '}'); a key without
// one is wrapped in braces, which makes the whole key the tag and so hashes
// exactly as the key itself does.
//
// The extra '}' keeps the names of every two keys apart (issue 26, finding
// 7): the lock "a:lock" is wrapped to "{a:lock}", and the lock "{a:lock}"
// would otherwise share its counter and its records. Read back from a
// name, the part before the suffix is either wrapped ("{k}", one '}' at its
// end, k with no '}'), tagged and not ending in '}' (the key itself), or
// tagged and ending in "}}" (the key and the extra '}'); an untagged part
// is the key itself. Keys tagged and ending in '}' were named without the
// extra '}' before: their counter is seeded from that old name on first use
// (fnGrant), so their tokens never go back across the upgrade.
func CounterKey(lock []byte) []byte { return lockproxyKey(lock, counterSuffix) }

// RecordsKey names the hash of a lock key's owner records (see the scripts),
// beside its counter and in the same hash slot.
func RecordsKey(lock []byte) []byte { return lockproxyKey(lock, recordsSuffix) }

// The suffixes of lockproxy's own keys. A key that ends in one of them is
// lockproxy's: clients may read it, never write it (see Decider.own).
const (
	counterSuffix = ":lockproxy:grants"
	recordsSuffix = ":lockproxy:owners"
	// RecordsSuffix ends every owner records key (for SCAN MATCH).
	RecordsSuffix = recordsSuffix
	// waitSuffix ends the key lockproxy sets and deletes before a
	// session's first WAIT (proxy/wait.go), so that WAIT counts the
	// session's writes: a client's key of that name would be deleted.
	waitSuffix = ":lockproxy:wait"
)

// WaitKey names the key of a WAIT's prime in the slot of the hash tag tag.
func WaitKey(tag string) string { return "{" + tag + "}" + waitSuffix }

func lockproxyKey(lock []byte, suffix string) []byte {
	if hasHashTag(lock) {
		out := append(make([]byte, 0, len(lock)+1+len(suffix)), lock...)
		if lock[len(lock)-1] == '}' {
			out = append(out, '}')
		}
		return append(out, suffix...)
	}
	if !canWrap(lock) {
		return append(append(make([]byte, 0, len(lock)+len(suffix)), lock...), suffix...)
	}
	out := make([]byte, 0, len(lock)+len(suffix)+2)
	out = append(out, '{')
	out = append(out, lock...)
	out = append(out, '}')
	return append(out, suffix...)
}

// hasHashTag follows Valkey's keyHashSlot: the first '{', then the first '}'
// after it, with at least one byte between.
func hasHashTag(k []byte) bool {
	for i, c := range k {
		if c == '{' {
			for j := i + 1; j < len(k); j++ {
				if k[j] == '}' {
					return j > i+1
				}
			}
			return false
		}
	}
	return false
}

// canWrap: "{" + k + "}" has k as its tag only when k holds no '}' (which
// would end the tag early) and is not empty.
func canWrap(k []byte) bool {
	if len(k) == 0 {
		return false
	}
	for _, c := range k {
		if c == '}' {
			return false
		}
	}
	return true
}
