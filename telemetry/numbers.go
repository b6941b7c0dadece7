package telemetry

// Numbers is what the counter table's rows read (counters.go): the proxy's
// numbers at render time, as plain values, which the proxy fills in (one
// small file there, proxy/numbers.go) for each scrape of /metrics and each
// LOCKPROXY STATS or INFO lockproxy. This package never reaches into the
// proxy's structs: what it knows of the proxy is this snapshot. The
// counters themselves stay where they are incremented (plain atomics on
// the reply path); only reading them goes through here.
//
// Locks is the one field that is not a copy: the per-rule counters are
// this package's own LockStats, read as the rows render.
type Numbers struct {
	Version       string
	UptimeSeconds int64

	Clients, Rejected, MaxClients int64
	// Dedicated: client connections with an upstream connection of their
	// own; each is one dedicated upstream connection too.
	Dedicated int64
	// SharedUpstream: live shared (multiplexed) connections to Valkey.
	SharedUpstream int64
	// Dials of shared connections, by result.
	Dials, DialErrors int64
	// Probed says Up and UpReason were filled: the verdict on Valkey is
	// checked only for /metrics (lockproxy_upstream_up), never for INFO or
	// STATS, which do not show it.
	Probed   bool
	Up       bool
	UpReason string
	// UpstreamErrors are failed dials and lost connections to Valkey by
	// reason, every reason but "ok" in upstream.Reasons' order.
	UpstreamErrors []Count
	// UpstreamFailedCommands were answered with an UPSTREAM error.
	UpstreamFailedCommands int64
	ClientIn, ClientOut    int64
	// Commands handled and the round trip of those sent to Valkey, by
	// command family, every family in order.
	Commands   []Count
	RoundTrips []Dist
	// PerCommand counts by command label, CommandLabels naming each
	// (package commands' LabelNames); nil: no samples.
	PerCommand    *CommandStats
	CommandLabels []string
	// SlowCommands: replies at or above the slow log's threshold.
	SlowCommands int64
	// Certificates: each certificate in force, N its expiry (notAfter) in
	// Unix seconds.
	Certificates []Count

	LockRules int64
	Locks     *LockStats

	AdminAuthFailures, AdminAuthLimited int64
	Reloads, ReloadFailures             int64
	// ReloadRan says a reload was tried; ReloadError is the last one's
	// error, "" when it succeeded.
	ReloadRan   bool
	ReloadError string

	LogWarnings, LogErrors int64
	AuditDropped           int64

	Epoch, GrantsLost, GrantsUndone, DurableShort int64

	// Cluster is nil in front of a single primary: its rows then have no
	// sample and no INFO line.
	Cluster *ClusterNumbers
}

// ClusterNumbers are the numbers of the proxy in front of a cluster.
type ClusterNumbers struct {
	Primaries, SlotsServed     int64
	MapChanges, MapUnconfirmed int64
	Moved, Asked, TryAgain     int64
	Splits, ShardFollows       int64
}

// Count is one labelled sample.
type Count struct {
	Label string
	N     int64
}

// Dist is one labelled histogram.
type Dist struct {
	Label string
	Snapshot
}
