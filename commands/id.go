package commands

// ID names a command whose own behaviour the proxy implements beyond its
// kind and flags: a transaction's steps, the cluster face's answers, the
// subscribe family's shard forms, a container whose subcommands decide
// (SCRIPT, FUNCTION, CLIENT). IDOf looks a name up; any other is IDOther.
// A place that treats one command its own way asks for its ID here
// instead of spelling its name.
type ID uint8

const (
	IDOther ID = iota
	IDMulti
	IDExec
	IDDiscard
	IDMonitor
	IDPing
	IDScan
	IDScript
	IDFunction
	IDShutdown
	IDClient
	IDReadonly
	IDReadwrite
	IDAsking
	IDSubscribe
	IDSSubscribe
	IDSUnsubscribe
	IDSPublish
	IDWait
	IDWaitAOF
)

var byNameID = map[string]ID{
	"multi": IDMulti, "exec": IDExec, "discard": IDDiscard,
	"monitor": IDMonitor, "ping": IDPing, "scan": IDScan,
	"script": IDScript, "function": IDFunction, "shutdown": IDShutdown, "client": IDClient,
	"readonly": IDReadonly, "readwrite": IDReadwrite, "asking": IDAsking,
	"subscribe": IDSubscribe, "ssubscribe": IDSSubscribe, "sunsubscribe": IDSUnsubscribe, "spublish": IDSPublish,
	"wait": IDWait, "waitaof": IDWaitAOF,
}

// IDOf is the ID of a command name in any letter case. It does not
// allocate.
func IDOf(name []byte) ID {
	if len(name) > len("sunsubscribe") {
		return IDOther // longer than every name above
	}
	var buf [12]byte
	l, ok := Lower(buf[:], name)
	if !ok {
		return IDOther
	}
	return byNameID[string(l)]
}
