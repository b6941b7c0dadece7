package rewrite

import (
	"bytes"
	"sync"
)

// maxWrappers bounds the wrappers kept; past it the cache starts over
// (each is rebuilt from its client's body on its next use).
const maxWrappers = 1024

var wrappers = struct {
	sync.RWMutex
	byClient map[wrapID]*Script // by the client script's SHA1, shape and rules
	bySHA    map[string]*Script // by the monitored text's own
}{byClient: map[wrapID]*Script{}, bySHA: map[string]*Script{}}

type wrapID struct {
	sha   string
	shape MonitorShape
	rules string
}

// ScriptBySHA finds a script lockproxy sends by its SHA1 (for the EVAL
// that follows a NOSCRIPT): one of Scripts, a known text's (known.go), or
// a monitored script still cached.
func ScriptBySHA(sha string) *Script {
	for _, sc := range Scripts {
		if sc.SHA == sha {
			return sc
		}
	}
	if sc := knownScript(sha); sc != nil {
		return sc
	}
	wrappers.RLock()
	defer wrappers.RUnlock()
	return wrappers.bySHA[sha]
}

// Unwrap gives a monitored script's reply the client's script's SHA1
// where Valkey named the monitored text's (in error messages: both are 40
// hex digits, so a RESP3 blob error keeps its length). Other scripts'
// replies pass.
func (sc *Script) Unwrap(reply []byte) []byte {
	if sc.Fn != "" {
		return sc.unwrapFcall(reply)
	}
	if sc.Client == "" || len(reply) == 0 || (reply[0] != '-' && reply[0] != '!') {
		return reply
	}
	if !bytes.Contains(reply, []byte(sc.SHA)) {
		return reply
	}
	return bytes.ReplaceAll(reply, []byte(sc.SHA), []byte(sc.Client))
}
