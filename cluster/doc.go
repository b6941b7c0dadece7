// Package cluster is what lockproxy knows about Valkey Cluster.
//
// Pure logic, no I/O: which hash slot a key is in (Slot, with hash tags, as
// Valkey's keyHashSlot), and which primary serves each slot (Map, read
// from a CLUSTER SHARDS or CLUSTER SLOTS reply; Agree, the first map two
// nodes give alike); a multi-key command cut into one part per slot and
// the parts' replies combined (Split, Combine: DEL, UNLINK, EXISTS, TOUCH,
// MGET, MSET); a keyless command's replies from every primary folded as
// its command tips say (FanOutPolicy, Fold); SCAN's cursor across the
// primaries (ScanCursor, ScanReply); INFO's Keyspace section summed
// (SumKeyspace); the answers of the single_node face (SingleNode); a
// node's redirect (ParseRedirect: MOVED, ASK, TRYAGAIN), config epoch
// (MyEpoch) and sunsubscribe message (SUnsubscribed). These have table
// tests without a socket.
//
// The View is the proxy's view of the cluster: the slot map now and its
// refresher (view.go), following a command's redirects (follow.go),
// running a split command's parts and a fan-out on the primaries
// (RunSplit, FanOut), INFO summed over them (SumInfo), the highest config
// epoch (TopEpoch), and following a sharded subscriber's channel when its
// slot moves (ShardFollower). It opens no connection of its own: it asks
// the nodes through the function the proxy gives it (Host.Do, which may
// wait, so a View's methods that ask are never called on an event loop),
// and relays a followed channel on the connection ShardClient.Dial opened;
// it sees a client only as a ShardClient. These are tested against a real
// cluster (internal/valkeytest).
//
// It must not import package proxy, know locks, sessions or the proxy's
// connections, or word a client-visible error itself: the texts come
// through Host (the proxy's catalogue). Which node a session's command
// goes to, what a session does on its own connection, when a command is
// split or fanned out (the command table's families) and what the epoch
// clue does with an epoch are the proxy's.
package cluster
