// Command chaos is lockproxy's chaos test: worker processes contend for a
// few locks through lockproxy while their holders stall past the lease,
// get stopped with SIGSTOP, release with a blind DEL and write to a fenced
// resource, and while the proxy and Valkey are restarted. A checker then
// reads every worker's history and the resource, and counts violations.
// The same run against plain Valkey (no proxy) must find violations, which
// shows the checker can fail.
//
//	chaos [-duration 60s] [-workers 6] [-locks 2] [-lease 250ms] [-instances 1] [-scripts] [-lose-writes]
//	      [-cluster | -sentinel] [-durability N] [-max-lease D] [-mode both|proxy|plain] [-json]
//
// # The run
//
// The driver starts valkey-server (append-only file, fsync always, so that
// a restart loses nothing that was acknowledged) and, in proxy mode,
// lockproxy in-process with one rule:
//
//	pattern "{*}:lock", release: rewrite, fence: counter "{base}:fence",
//	guards ["{base}:items"], check: highest, unfenced_writes: reject
//
// Each worker is a separate process (this binary, re-executed). In a loop
// it picks a lock {cN}:lock, acquires it with SET value NX PX lease
// (retrying while it is taken), learns its fencing token (LOCKPROXY FENCE
// through the proxy; INCR {cN}:fence — client-side tokens — without it),
// writes "enter", one to three "work" entries and "exit" to the resource,
// the list {cN}:items, each entry carrying its token, sometimes sleeping
// past its lease between two writes, then sends an ECHO, a SET and a GET
// with payloads only it knows, and releases with a blind DEL. Every command
// is logged with its reply and the wall-clock times around it.
//
// Meanwhile the driver, at random intervals: stops a random worker with
// SIGSTOP for 1.2–3 leases and resumes it with SIGCONT; and, alternately,
// restarts the proxy (graceful shutdown with a 1 s deadline, then a new
// proxy on the same address) or kills Valkey with SIGKILL and starts it
// again on the same port and files. Both modes get the same schedule and
// the same worker randomness (one seed). The whole run is bounded by
// -duration and -max-grants.
//
// # Scripts (-scripts)
//
// The workers take, write and release as a lock library that works in Lua
// does: bsm/redislock's obtain script instead of SET NX PX, a script that
// RPUSHes the entry instead of RPUSH, redislock's token-checked release
// script instead of the blind DEL. Through the proxy each runs in its
// wrapper: the obtain mints the grant LOCKPROXY FENCE then reports, the
// write is checked against the fence, the release drops the owner record.
// Without the proxy the release is safe already; the writes are not.
//
// # Lost writes (-lose-writes)
//
// Valkey runs without persistence, so each of the schedule's Valkey
// restarts (SIGKILL) loses every lock, counter, owner record and resource
// entry, as a primary restarted without persistence does. Without the
// proxy the counter restarts at 1 and tokens are handed out twice;
// through it, tokens rise across the restart (an epoch in their high bits,
// docs/failover.md).
//
// With -cluster, -lose-writes makes the Valkey fault a failover that loses
// writes: a random primary's replica is cut off (its replication user
// switched off, its link killed), the workers go on for two leases, the
// primary is killed with SIGKILL and the cluster promotes the replica.
//
// # Sentinel (-sentinel)
//
// A primary and its replica (without persistence with -lose-writes), three
// Sentinels watching them (quorum 2, down after 1 s), and lockproxy
// following Sentinel; the plain run's workers ask the Sentinels for the
// primary as a Sentinel-aware client does, so both runs meet the same
// faults. The Valkey fault is a failover that loses writes: the replica is
// cut off (its replication user switched off on the primary, its link
// killed), the workers go on for half a lease to a lease, the primary is
// killed with SIGKILL, Sentinel promotes the replica, and the old primary
// is started again and made the new one's replica by Sentinel (the fault
// waits for its link; about 15 s a failover).
//
// # Several instances (-instances 2 or more)
//
// A proxy tier: that many lockproxy instances in front of the one Valkey,
// each a process of its own (this binary, re-executed), with the rule's
// session: client_name. Every worker names its connections (CLIENT SETNAME
// chaos-w<N>) and sends each command to the next instance in turn, as a
// pooled client behind a load balancer does: a lock is often acquired
// through one instance, its token asked, its resource written and its
// release sent through the other. The proxy restarts of the schedule become
// kill -9 of a random instance, down for up to a lease, then started again
// on its address. The plain run makes the same connections to Valkey.
//
// # What the checker counts
//
// Violations (all must be 0 with lockproxy):
//
//   - successor locks deleted: a blind DEL that returned 1 although it was
//     sent after its own lock had certainly expired — later than the
//     acquiring SET's reply + lease + 5 ms. Its own key was gone, so what
//     it deleted was a later holder's lock.
//   - stale writes accepted: an entry of a resource list whose fencing
//     token is lower than the token of an entry the resource accepted
//     before it (Kleppmann's rule: a resource must refuse a token lower
//     than one it has seen).
//   - overlapping critical sections observed at the resource: a grant whose
//     accepted writes (from its first to its last) have another grant's
//     accepted write between them in the list. Holders overlapping in wall
//     time is unavoidable with leases and pauses (it is reported, as
//     information); what must not happen is that the overlap reaches the
//     resource.
//   - replies lost: a command that got no reply within 8 s while its
//     connection stayed open (far above the proxy's 1 s reply timeout and
//     any SIGSTOP). A connection that ends before the reply is not a lost
//     reply — the client is told — and is counted as "cut".
//   - fencing tokens handed out twice: a token a grant's holder learnt
//     that an earlier grant of the same lock had learnt already.
//   - replies misrouted: a reply of the wrong shape for its command, an
//     error code the command cannot produce, a probe (ECHO, GET of the
//     worker's own key) answered with anything but its own payload, or a
//     resource entry no worker wrote.
//   - holders refused (several instances only, where owners are portable):
//     a holder's release refused or deleting nothing, its LOCKPROXY FENCE
//     answering nil, or its write refused, with the reply back before its
//     lease could have ended (the acquiring SET's send time + lease - 5 ms).
//
// The exit status is 0 when every proxy run has no violation and every
// plain-Valkey run has at least one.
//
// It owns its workers, its checker and the servers it starts for a run;
// it must not reach into the proxy's state: it drives lockproxy as
// clients do (package proxy started in-process, or the binary) and judges
// only what clients and Valkey can see.
package main
