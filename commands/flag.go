package commands

// Flag marks a family of commands by name that the proxy treats alike
// beyond its kind; FlagsOf looks a name up. A place that decides by family
// asks the table instead of naming the commands itself.
type Flag uint8

const (
	// ScriptCall: EVAL, EVALSHA, FCALL and their _RO forms, which may
	// hold Valkey while they run.
	ScriptCall Flag = 1 << iota
	// ClusterFace: CLUSTER, READONLY, READWRITE, ASKING, which the
	// proxy answers in front of a cluster.
	ClusterFace
	// ShardChannel: SSUBSCRIBE, SUNSUBSCRIBE, SPUBLISH, whose channel
	// names place them in a slot as a key would.
	ShardChannel
	// Delete: DEL and UNLINK, split by slot when they release locks in
	// several.
	Delete
	// OneServer: PING and INFO, keyless commands in front of a cluster
	// that one node answers, not every primary.
	OneServer
	// SplitSum, SplitMGet, SplitMSet: split by slot in front of a
	// cluster when their keys span slots: DEL, UNLINK, EXISTS, TOUCH (the
	// counts added up), MGET, MSET.
	SplitSum
	SplitMGet
	SplitMSet
)

var byNameFlags = map[string]Flag{
	"eval": ScriptCall, "evalsha": ScriptCall, "eval_ro": ScriptCall, "evalsha_ro": ScriptCall,
	"fcall": ScriptCall, "fcall_ro": ScriptCall,
	"cluster": ClusterFace, "readonly": ClusterFace, "readwrite": ClusterFace, "asking": ClusterFace,
	"ssubscribe": ShardChannel, "sunsubscribe": ShardChannel, "spublish": ShardChannel,
	"del": Delete | SplitSum, "unlink": Delete | SplitSum, "exists": SplitSum, "touch": SplitSum,
	"mget": SplitMGet, "mset": SplitMSet,
	"ping": OneServer, "info": OneServer,
}

// FlagsOf is the flags of a command name in any letter case. It does not
// allocate.
func FlagsOf(name []byte) Flag {
	var buf [24]byte
	l, ok := Lower(buf[:], name)
	if !ok {
		return 0
	}
	return byNameFlags[string(l)]
}
