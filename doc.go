// Package lockproxy is a RESP proxy for Valkey and Redis that makes
// distributed-lock release safe for applications never written to be safe.
//
// This root package has no code of its own. The end-to-end tests, which run
// the proxy against a real valkey-server (or redis-server), are in e2e.
// The packages, from the wire inwards:
//
//   - cmd/lockproxy: the program (flags, configuration file, signals,
//     check-config, lint).
//   - proxy: network and sessions: client connections, which upstream
//     connections a session uses (shared or its own), which cluster node a
//     session's command goes to, what a failover does, the replies the
//     proxy gives itself, and the numbers it reads for the counter table
//     (a telemetry.Numbers filled in proxy/numbers.go).
//   - clients: the state the proxy keeps for its clients because they
//     share connections, as Valkey would show it: CLIENT LIST, INFO and
//     KILL, client names, client ids both ways, CLIENT TRACKING's options
//     and relays, subscriptions, accepted logins, the LOCKPROXY AUTH limit,
//     MONITOR's own lines.
//   - evloop: the event loops: epoll rounds that read many clients and the
//     shared upstream connections from one goroutine, batch each round's
//     writes to Valkey, wake paused clients and drop idle ones; a client is
//     an interface to it.
//   - replies: a client's replies on their way out: held until their turn
//     in command order, then queued in chunks for the socket.
//   - upstream: the connections to Valkey: dialling (TCP, TLS), the
//     handshake, the pools, Sentinel, and a connection once it is open: the
//     commands waiting for replies, batched writes, the reader that hands
//     each reply to its session, the reply deadline, a connection's death.
//   - telemetry: counters, histograms, lock events, the audit file, the
//     counter table (one row per number: its Prometheus name, help and
//     INFO / STATS lines, telemetry/counters.go) and its rendering as INFO
//     lockproxy, LOCKPROXY STATS and /metrics.
//   - admin: lockproxy's admin commands (LOCKPROXY AUDIT, LOCKS, FENCE,
//     CHECK, CONFIG, RELOAD, ...), the admin logins, reading the lock
//     records through the locks' index, the configuration in force, and the
//     HTTP endpoints (/metrics, /healthz, /readyz); it sees the proxy through
//     admin.Host.
//   - locks: the lock glue around a plan: what its reply means for the
//     counters and events, a session's grants, the epoch the grants mint
//     under and learning it, a durable command's WAIT, answer and undo,
//     and the encoding of a plan's script call.
//   - resp: the RESP codec (client commands, reply framing), no I/O.
//   - config: the configuration file and the process settings it gives
//     (listen, upstream, TLS, limits, event loops, admin, metrics, log):
//     YAML decoding and errors with file and line.
//   - policy: lock policy: Valkey glob patterns, the lock rules, fence
//     templates and their checks, built by config and read by rewrite.
//   - commands: the proxy's command table: each name's kind, metrics
//     family, flags and id, how long a blocking command waits, and the
//     offline fallback, derived from keyspec's table.
//   - keyspec: Valkey's command table and key specs: which arguments are keys
//     and what a command does to each.
//   - rewrite: what to do with a command on a lock key, as a pure Plan, and
//     every Lua script lockproxy sends.
//   - scriptcheck: what a client's Lua script does to each key it touches.
//   - cluster: Valkey Cluster: hash slots, the slot map and keeping it
//     current, splitting multi-key commands by slot and folding fan-out
//     replies, SCAN's cursor, the single_node face's answers, following
//     redirects and sharded subscribers; it asks the nodes through the
//     proxy's function.
//   - internal/luaeval: runs lockproxy's scripts offline, for rewrite's tests.
//   - internal/catalogue: the error-catalogue checks (texts only in
//     errors.go, each starting with a code word), run by the tests of
//     proxy, admin, locks and clients; internal/docscheck: a test that keeps
//     the docs' file, function and section references true.
//   - internal/valkeytest, internal/servertable: real servers and their
//     command tables for tests; internal/valkeynum: Valkey's integer parsing;
//     internal/libscripts: lock libraries' own scripts, for the benchmarks
//     and the chaos test.
//   - cmd/lockbench, cmd/chaos: the lock benchmark of make bench and the
//     chaos test of make chaos; cmd/ociimage: the container image as an
//     OCI layout, without a container engine.
//
// docs/design.md is the map of these packages, their seams and the path of
// a command through them.
package lockproxy
