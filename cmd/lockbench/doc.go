// Command lockbench measures what lock traffic costs through lockproxy,
// for `make bench` (scripts/bench.d/locks.sh). valkey-benchmark cannot do
// it: a release needs the same connection to have acquired first.
//
//	release  acquire + release cycles: through the proxy as a client that
//	         knows nothing (SET NX PX, then DEL), and directly as a client
//	         that sends the same token-checked scripts itself (EVALSHA of
//	         lockproxy's acquire and release scripts). The ratio is what
//	         letting the proxy do it costs.
//	scripted the same cycles through the proxy against a client that sends
//	         those scripts itself, through the same proxy: what the rewrite
//	         costs beyond the hop, the figure safe release's goal is set on
//	         (the hop alone is transit's, and the foundation's, ratio).
//	transit  the same two round trips (SET NX PX, DEL) on a key no rule
//	         matches, through the proxy and directly: what the extra hop
//	         alone costs this client, so that release's ratio can be read
//	         as hop plus lock handling.
//	durable  the release cycle on a lock whose rule has durability:
//	         {replicas: 1, timeout: 1s} (each acquisition answered once a
//	         replica acknowledged it, WAIT), against the release cycle
//	         through the same proxy: what durability costs.
//	fenced   writes to a key a lock guards, from its holder, through the
//	         proxy (each one a fenced script) against plain writes to an
//	         unguarded key through the same proxy.
//	script-acquire  a client's own obtain and release scripts (bsm/redislock's)
//	         through the proxy on a lock key, where each runs in its wrapper
//	         (the grant, the owner record), against the same scripts sent
//	         directly: what a script acquisition costs (goal >= 0.85).
//	script-fenced   a holder's scripted write to a guarded key through the
//	         proxy (its wrapper checks the fence) against the same script
//	         sent directly.
//	script-hop, script-fenced-hop  the same scripts on a key no rule
//	         matches (or no lock guards), through the proxy (forwarded, not
//	         wrapped) and directly: the hop's share of the two above, which
//	         bounds them.
//
// It prints one tab-separated line per measurement: name, ops/s of each
// side, and the ratio. -only a (or b) runs one side, to profile it.
//
// It sends lockproxy's scripts (package rewrite's texts) for the direct
// side; it must not import package proxy, so that the proxy side is the
// binary make bench measures.
package main
