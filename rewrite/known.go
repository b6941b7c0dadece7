package rewrite

import (
	"crypto/sha1"
	_ "embed"
	"encoding/hex"
)

// The catalogue of known lock scripts: the Lua texts the lock libraries
// send, byte for byte, each keyed by the SHA1 of its exact text. An EVAL of
// such a text, or an EVALSHA of its SHA1, runs lockproxy's own equivalent
// (known_equiv.go) instead of the text under the monitor: the same replies
// and effects on Valkey, with the records a plain acquisition or release
// makes, at a fraction of the monitor's cost. Any other text (one byte
// different) runs under the monitor as before.
//
// To add a text: copy it from the library's source exactly (a Go raw
// string keeps tabs and line breaks; mind a leading line break), write its
// equivalent with the same calls on the same lines (an error Valkey raises
// names the line), its argument check (fits), and its entry here with the
// library, versions and file it comes from; then a differential test in
// e2e/known_test.go.

// knownText is one library's script text and where it comes from.
type knownText struct {
	Lib, Versions, File, Name string
	Text                      string
	// Op is what the text does, which picks its equivalent (knownOps).
	Op knownOp
	// Line is the line of the text its equivalent's lines start on (a
	// text that starts with a line break: 2).
	Line int
}

// bsm/redislock v0.10.0 keeps its scripts in files, copied here byte for
// byte (trailing spaces included): obtain.lua, release.lua, refresh.lua
// and pttl.lua. They take several keys; their equivalents take one (the
// library's Obtain of one key), and more run under the monitor.
var (
	//go:embed knowntexts/redislock-v0.10.0-obtain.lua
	redislockObtain10 string
	//go:embed knowntexts/redislock-v0.10.0-release.lua
	redislockRelease10 string
	//go:embed knowntexts/redislock-v0.10.0-refresh.lua
	redislockRefresh10 string
	//go:embed knowntexts/redislock-v0.10.0-pttl.lua
	redislockPTTL10 string
)

// The texts.
const (
	// bsm/redislock v0.3.0 .. v0.9.4, redislock.go, luaRelease.
	redislockRelease = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`
	// bsm/redislock v0.3.0 .. v0.9.4, redislock.go, luaRefresh.
	redislockRefresh = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("pexpire", KEYS[1], ARGV[2]) else return 0 end`
	// bsm/redislock v0.3.0 .. v0.9.4, redislock.go, luaPTTL.
	redislockPTTL = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("pttl", KEYS[1]) else return -3 end`
	// bsm/redislock v0.9.4, redislock.go, luaObtain (before v0.9.4
	// Obtain sent a plain SET NX PX).
	redislockObtain = "\nif redis.call(\"set\", KEYS[1], ARGV[1], \"NX\", \"PX\", ARGV[3]) then return redis.status_reply(\"OK\") end\n\nlocal offset = tonumber(ARGV[2])\nif redis.call(\"getrange\", KEYS[1], 0, offset-1) == string.sub(ARGV[1], 1, offset) then return redis.call(\"set\", KEYS[1], ARGV[1], \"PX\", ARGV[3]) end\n"

	// go-redsync/redsync v4.0.0 .. v4.11.0, mutex.go, deleteScript.
	redsyncDelete = "\n\tif redis.call(\"GET\", KEYS[1]) == ARGV[1] then\n\t\treturn redis.call(\"DEL\", KEYS[1])\n\telse\n\t\treturn 0\n\tend\n"
	// go-redsync/redsync v4.12.0 .. v4.18.1, mutex.go then scripts.go,
	// deleteScript (answers -1 for an absent lock).
	redsyncDelete412 = "\n\tlocal val = redis.call(\"GET\", KEYS[1])\n\tif val == ARGV[1] then\n\t\treturn redis.call(\"DEL\", KEYS[1])\n\telseif val == false then\n\t\treturn -1\n\telse\n\t\treturn 0\n\tend\n"
	// go-redsync/redsync v4.0.0 .. v4.18.1, mutex.go then scripts.go,
	// touchScript.
	redsyncTouch = "\n\tif redis.call(\"GET\", KEYS[1]) == ARGV[1] then\n\t\treturn redis.call(\"PEXPIRE\", KEYS[1], ARGV[2])\n\telse\n\t\treturn 0\n\tend\n"
	// go-redsync/redsync v4.12.0 .. v4.18.1, mutex.go then scripts.go,
	// touchWithSetNXScript (Extend with WithSetNXOnExtend).
	redsyncTouchSetNX = "\n\tif redis.call(\"GET\", KEYS[1]) == ARGV[1] then\n\t\treturn redis.call(\"PEXPIRE\", KEYS[1], ARGV[2])\n\telseif redis.call(\"SET\", KEYS[1], ARGV[1], \"PX\", ARGV[2], \"NX\") then\n\t\treturn 1\n\telse\n\t\treturn 0\n\tend\n"
)

// redsync v4 takes its lock with a plain SET key value NX PX ms
// (conn.SetNX in mutex.go's acquire): lockproxy's Acquire plan already
// takes it, so it needs no entry.

// knownTexts is the catalogue.
var knownTexts = []knownText{
	{"bsm/redislock", "v0.3.0-v0.9.4", "redislock.go", "luaRelease", redislockRelease, opRelease, 1},
	{"bsm/redislock", "v0.3.0-v0.9.4", "redislock.go", "luaRefresh", redislockRefresh, opRefresh, 1},
	{"bsm/redislock", "v0.3.0-v0.9.4", "redislock.go", "luaPTTL", redislockPTTL, opRead, 1},
	{"bsm/redislock", "v0.9.4", "redislock.go", "luaObtain", redislockObtain, opObtain, 2},
	{"bsm/redislock", "v0.10.0", "obtain.lua", "luaObtain", redislockObtain10, opObtainM, 1},
	{"bsm/redislock", "v0.10.0", "release.lua", "luaRelease", redislockRelease10, opReleaseM, 1},
	{"bsm/redislock", "v0.10.0", "refresh.lua", "luaRefresh", redislockRefresh10, opRefreshM, 1},
	{"bsm/redislock", "v0.10.0", "pttl.lua", "luaPTTL", redislockPTTL10, opRead, 1},
	{"go-redsync/redsync", "v4.0.0-v4.11.0", "mutex.go", "deleteScript", redsyncDelete, opRelease, 2},
	{"go-redsync/redsync", "v4.12.0-v4.18.1", "mutex.go, scripts.go", "deleteScript", redsyncDelete412, opReleaseAbsent, 2},
	{"go-redsync/redsync", "v4.0.0-v4.18.1", "mutex.go, scripts.go", "touchScript", redsyncTouch, opRefresh, 2},
	{"go-redsync/redsync", "v4.12.0-v4.18.1", "mutex.go, scripts.go", "touchWithSetNXScript", redsyncTouchSetNX, opTouchSetNX, 2},
}

// known is a catalogue entry as the decider uses it: the text, its SHA1,
// and the script lockproxy runs for it.
type known struct {
	knownText
	SHA string
	// self is the text itself as a script of lockproxy's (run where no
	// lock is involved, or for a text that only reads); equiv is the
	// equivalent with records (nil for a read-only text).
	self, equiv *Script
}

// knownBySHA is the catalogue by SHA1 (lower-case hex).
var knownBySHA = func() map[string]*known {
	m := make(map[string]*known, len(knownTexts))
	for _, t := range knownTexts {
		sum := sha1.Sum([]byte(t.Text))
		sha := hex.EncodeToString(sum[:])
		k := &known{knownText: t, SHA: sha}
		k.self = &Script{Name: "known " + t.Lib + " " + t.Name, Body: t.Text, SHA: sha, Client: sha}
		if t.Op != opRead {
			k.equiv = equivalent(k)
		}
		m[sha] = k
	}
	return m
}()

// KnownTexts lists the catalogue's texts (for the script cache, which
// holds them from the start: see SeedKnown, and for tests).
func KnownTexts() []string {
	out := make([]string, len(knownTexts))
	for i, t := range knownTexts {
		out[i] = t.Text
	}
	return out
}

// knownScript finds one of the known texts' scripts by its SHA1 (for the
// EVAL that follows a NOSCRIPT).
func knownScript(sha string) *Script {
	for _, k := range knownBySHA {
		if k.self.SHA == sha {
			return k.self
		}
		if k.equiv != nil && k.equiv.SHA == sha {
			return k.equiv
		}
	}
	return nil
}

// KnownEquivalentSHA is the SHA1 of the script lockproxy runs for a known
// text that writes ("" for any other text): tests check from Valkey's
// script cache that it ran.
func KnownEquivalentSHA(text string) string {
	sum := sha1.Sum([]byte(text))
	if k := knownBySHA[hex.EncodeToString(sum[:])]; k != nil && k.equiv != nil {
		return k.equiv.SHA
	}
	return ""
}
