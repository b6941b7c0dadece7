package commands

// The offline fallback, used until Valkey's table is loaded: what the
// tables of valkey-server 8 and redis-server 7.0 say, written out.
// TestFallbackAgrees loads COMMAND from both and checks that FromTable
// gives these lists.
var (
	// fallbackBlocking: the commands flagged "blocking" (WAITAOF exists
	// from Valkey 7.2 / Redis 7.2 on), and WAIT (blocksUnflagged).
	fallbackBlocking = []string{"blpop", "brpop", "brpoplpush", "blmove", "blmpop",
		"bzpopmin", "bzpopmax", "bzmpop", "wait", "waitaof", "xread", "xreadgroup"}
	// fallbackSubscribe: the subscribe family, flagged "pubsub" and
	// "noscript" (PUBLISH and PUBSUB ... are "pubsub" only).
	fallbackSubscribe = []string{"subscribe", "psubscribe", "ssubscribe",
		"unsubscribe", "punsubscribe", "sunsubscribe"}
	// fallbackContainers: the commands with subcommands that clients use.
	fallbackContainers = []string{"client", "config", "script", "function", "object", "memory",
		"xinfo", "acl", "cluster", "command", "latency", "module", "pubsub", "slowlog", "xgroup"}
	// fallbackGated: the commands and subcommands that reconfigure
	// Valkey, as gatedFromTable derives them from the "admin" flag.
	fallbackGated = []string{"acl|deluser", "acl|dryrun", "acl|getuser", "acl|list", "acl|load",
		"acl|log reset", "acl|save", "acl|setuser", "bgrewriteaof", "bgsave",
		"client|pause", "client|unblock", "client|unpause",
		"cluster|addslots", "cluster|addslotsrange", "cluster|bumpepoch", "cluster|delslots",
		"cluster|delslotsrange", "cluster|failover", "cluster|flushslots", "cluster|forget",
		"cluster|meet", "cluster|replicate", "cluster|reset", "cluster|saveconfig",
		"cluster|set-config-epoch", "cluster|setslot",
		"config|get", "config|resetstat", "config|rewrite", "config|set",
		"debug", "failover", "latency|reset", "module|load", "module|loadex", "module|unload",
		"pfdebug", "replicaof", "save", "shutdown", "slaveof", "slowlog|reset"}
)

// Facts the flags do not carry, kept by name whatever the table says.
var (
	// blocksUnflagged: WAIT blocks (on the replicas' acknowledgements) but
	// Redis 7.0 does not flag it "blocking"; Valkey 8 does.
	blocksUnflagged = []string{"wait"}
)

// Fallback is the command knowledge used until a table is loaded.
var Fallback = fromLists(fallbackBlocking, fallbackSubscribe, fallbackContainers, fallbackGated)
