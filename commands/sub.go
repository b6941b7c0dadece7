package commands

// Sub names a subcommand whose own behaviour the proxy implements: its
// container's ID does not say enough (SCRIPT KILL goes on a connection of
// its own, SCRIPT EXISTS has its reply amended). SubOf looks a command up;
// any other is SubOther. The names are Valkey's own (COMMAND lists
// "script|kill" under SCRIPT), so a place that treats one subcommand its
// own way asks for its Sub here instead of spelling its word.
type Sub uint8

const (
	SubOther Sub = iota
	ScriptKill
	ScriptExists
	FunctionKill
	FunctionStats
	FunctionList
	FunctionLoad
	FunctionRestore
	ClientPause
	ClientUnpause
	ClientReply
	ClientTracking
	ClientGetredir
	ClientCaching
	ClientID
	ClientInfo
	ClientList
	ClientKill
	ClientNoEvict
	ClientNoTouch
	ClientSetname
	ClientGetname
	ClientSetinfo
	ClusterCountkeysinslot
	ClusterGetkeysinslot
)

var bySubName = map[string]Sub{
	"script|kill": ScriptKill, "script|exists": ScriptExists,
	"function|kill": FunctionKill, "function|stats": FunctionStats, "function|list": FunctionList,
	"function|load": FunctionLoad, "function|restore": FunctionRestore,
	"client|pause": ClientPause, "client|unpause": ClientUnpause, "client|reply": ClientReply,
	"client|tracking": ClientTracking, "client|getredir": ClientGetredir, "client|caching": ClientCaching,
	"client|id": ClientID, "client|info": ClientInfo, "client|list": ClientList, "client|kill": ClientKill,
	"client|no-evict": ClientNoEvict, "client|no-touch": ClientNoTouch,
	"client|setname": ClientSetname, "client|getname": ClientGetname, "client|setinfo": ClientSetinfo,
	"cluster|countkeysinslot": ClusterCountkeysinslot, "cluster|getkeysinslot": ClusterGetkeysinslot,
}

// SubOf is the Sub of a command (its name and arguments), in any letter
// case: its first argument read as a subcommand of its name. It does not
// allocate.
func SubOf(args [][]byte) Sub {
	if len(args) < 2 {
		return SubOther
	}
	var buf [32]byte
	name, ok := Lower(buf[:len(buf)/2], args[0])
	if !ok {
		return SubOther
	}
	sub, ok := Lower(buf[len(name)+1:], args[1])
	if !ok {
		return SubOther
	}
	buf[len(name)] = '|'
	return bySubName[string(buf[:len(name)+1+len(sub)])]
}
