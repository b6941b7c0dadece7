// Package cluster is what lockproxy knows about Valkey Cluster as pure
// logic: which hash slot a key is in (Slot, with hash tags, as Valkey's
// keyHashSlot), and which primary serves each slot (Map, read from a CLUSTER
// SHARDS or CLUSTER SLOTS reply). It does no I/O: the proxy asks the nodes
// and hands the replies here, so every rule can be tested without a socket.
// It must not know locks, sessions or connections: routing a command and
// following redirects are the proxy's.
package cluster
