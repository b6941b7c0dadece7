package config

import (
	"net"
	"os"
	"slices"
	"time"

	"github.com/lockproxy/lockproxy/policy"
)

// Defaults. A zero or omitted value in the file means the default below
// (except where a field's comment says 0 has a meaning of its own).
const (
	DefaultListen                  = "127.0.0.1:6380"
	DefaultMaxClients              = 10000 // Valkey's own maxclients default
	DefaultProtoMaxBulkLen         = 512 * MB
	DefaultClientQueryBufferLimit  = 1 * GB
	DefaultClientOutputBufferLimit = 256 * MB
	DefaultMaxPipeline             = 100000
	DefaultEventLoops              = 1
	// MaxBusyPoll bounds busy_poll: polling longer than this between
	// rounds keeps a core busy for latencies no client would notice.
	MaxBusyPoll             = Duration(time.Millisecond)
	DefaultShutdownTimeout  = Duration(10 * time.Second)
	DefaultDrainDelay       = Duration(5 * time.Second)
	DefaultKeepLapsed       = Duration(10 * time.Minute)
	DefaultUpstreamAddr     = "127.0.0.1:6379"
	DefaultPoolSize         = 2
	DefaultDialTimeout      = Duration(5 * time.Second)
	DefaultReplyTimeout     = Duration(30 * time.Second)
	DefaultReconnectBackoff = Duration(100 * time.Millisecond)
	DefaultMaxBackoff       = Duration(5 * time.Second)
	DefaultClusterRefresh   = Duration(10 * time.Second)
	DefaultSlowlogThreshold = Duration(100 * time.Millisecond)
	DefaultSlowlogMaxLen    = 128
	MaxSlowlogLen           = 100000
)

// Redacted is what [Config.Redacted] puts in place of a non-empty secret.
const Redacted = "(redacted)"

// Config is the whole configuration file. Field comments give each YAML key
// and its default; config.example.yaml at the repository root shows them all.
type Config struct {
	// listen: host:port the proxy accepts clients on. Default 127.0.0.1:6380.
	// An empty host listens on every interface; port 0 picks a free port.
	Listen string `yaml:"listen"`
	// maxclients: most clients connected at once; more are refused as Valkey
	// refuses them. Default 10000.
	MaxClients int `yaml:"maxclients"`
	// proto_max_bulk_len: largest bulk string a client may send. Default
	// 512mb. Must not exceed client_query_buffer_limit.
	ProtoMaxBulkLen Size `yaml:"proto_max_bulk_len"`
	// client_query_buffer_limit: most unparsed input buffered per client.
	// Default 1gb.
	ClientQueryBufferLimit Size `yaml:"client_query_buffer_limit"`
	// client_output_buffer_limit: reply bytes pending for one client before the
	// proxy disconnects it for not reading. Default 256mb.
	ClientOutputBufferLimit Size `yaml:"client_output_buffer_limit"`
	// max_pipeline: commands in flight per client before the proxy stops
	// reading from it. Default 100000.
	MaxPipeline int `yaml:"max_pipeline"`
	// event_loops: how many event loops read clients. Default 1. (TLS
	// clients and clients on a dedicated connection have a goroutine each.)
	EventLoops int `yaml:"event_loops"`
	// busy_poll: how long an event loop keeps asking for work after a
	// round before it sleeps. 0 (the default) sleeps at once; 50us cuts a
	// lone client's latency at the cost of CPU (see MaxBusyPoll).
	BusyPoll Duration `yaml:"busy_poll"`
	// gomaxprocs: Go's GOMAXPROCS; 0 (the default) leaves Go's own choice.
	GOMAXPROCS int `yaml:"gomaxprocs"`
	// shutdown_timeout: how long shutdown waits for in-flight commands.
	// Default 10s.
	ShutdownTimeout Duration `yaml:"shutdown_timeout"`
	// drain_delay: on SIGTERM, how long /readyz answers 503 while the proxy
	// still accepts and serves clients, before it closes the listener and
	// shuts down (shutdown_timeout); a load balancer or Kubernetes stops
	// sending new clients meanwhile. Default 5s when a file leaves it out
	// ([Default] and [Parse]; a Config built in code starts at 0); 0 closes
	// the listener at once. SIGINT skips it.
	DrainDelay Duration `yaml:"drain_delay"`
	// client_idle_timeout: disconnect clients idle this long; 0 (the default)
	// never does.
	ClientIdleTimeout Duration `yaml:"client_idle_timeout"`
	// keep_lapsed: how long an owner record, kept in Valkey beside its lock,
	// outlives the lock's lease, so that a stalled holder's late release is
	// token-checked (answers 0) rather than refused as a stranger's.
	// Default 10m; a reload applies it to the next grant.
	KeepLapsed Duration `yaml:"keep_lapsed"`

	// cluster_face: what CLUSTER commands answer with upstream.cluster set.
	// hidden (the default): as a standalone server, so plain clients work
	// unchanged; single_node: as one node owning every slot at the address
	// the client connected to, so cluster-aware clients use the proxy alone.
	ClusterFace ClusterFace `yaml:"cluster_face"`

	// admin_commands: who may run, through lockproxy, the commands that
	// reconfigure Valkey (ACL SETUSER, CONFIG SET, REPLICAOF, CLUSTER
	// DELSLOTS, ...; the list is derived from Valkey's "admin" flag,
	// package commands), as plain commands and from scripts. admin (the
	// default): a client logged in with LOCKPROXY AUTH as an admin with
	// role operate, as for LOCKPROXY's operate subcommands (so everyone
	// where those are open: no admin credentials and a loopback listen
	// address); scripts and functions never. refuse: nobody. forward:
	// everybody, as Valkey would.
	AdminCommands AdminCommands `yaml:"admin_commands"`

	Log      LogConfig      `yaml:"log"`
	Upstream UpstreamConfig `yaml:"upstream"`
	TLS      ListenerTLS    `yaml:"tls"`
	Admin    AdminConfig    `yaml:"admin"`
	Metrics  MetricsConfig  `yaml:"metrics"`
	Slowlog  SlowlogConfig  `yaml:"slowlog"`

	// on_flush: what to do with FLUSHALL/FLUSHDB, which delete every lock
	// without checking owners. Default allow.
	OnFlush policy.FlushPolicy `yaml:"on_flush"`

	// locks: the lock rules, tried in order; the first whose pattern matches a
	// key decides for it. A key no rule matches is passed through untouched.
	// Default: none.
	Locks []LockRule `yaml:"locks"`
}

// LogConfig is the log section.
type LogConfig struct {
	Level  LogLevel  `yaml:"level"`  // debug|info|warn|error; default info
	Format LogFormat `yaml:"format"` // text|json; default text
	// AuditFile receives every lock event as one JSON line; empty = none.
	AuditFile string `yaml:"audit_file"`
	// AuditMaxSize rotates the audit file past this size (FILE.1, FILE.2 ...);
	// default 64mb.
	AuditMaxSize Size `yaml:"audit_max_size"`
	// AuditKeep is how many rotated files are kept; default 5.
	AuditKeep int `yaml:"audit_keep"`
}

// UpstreamConfig is the real Valkey server the proxy forwards to.
type UpstreamConfig struct {
	Addr string `yaml:"addr"` // host:port; default 127.0.0.1:6379
	// Username and Password are the ACL user the proxy's shared connections
	// log in as; empty username = "default", empty password = no AUTH.
	Username string `yaml:"username"`
	Password string `yaml:"password"`
	// PasswordFile, instead of Password, names a file whose content (one
	// trailing newline dropped) is the password: a Kubernetes Secret or a
	// systemd credential. Relative to the config file's directory. With
	// neither set, the environment variable LOCKPROXY_UPSTREAM_PASSWORD
	// is used when set.
	PasswordFile string `yaml:"password_file"`
	DB           int    `yaml:"db"` // database the shared connections start in; default 0
	// PoolSize is the number of shared upstream connections per (protocol,
	// db); 0 = the default, 2.
	PoolSize int `yaml:"pool_size"`
	// DialTimeout bounds connecting (and the TLS handshake); default 5s.
	DialTimeout Duration `yaml:"dial_timeout"`
	// ReplyTimeout bounds the wait for a reply to a non-blocking command;
	// blocking commands (BLPOP ...) wait as long as they asked. Default 30s.
	ReplyTimeout Duration `yaml:"reply_timeout"`
	// ReconnectBackoff is the first wait before redialling a lost upstream; it
	// doubles up to MaxBackoff. Defaults 100ms and 5s.
	ReconnectBackoff Duration    `yaml:"reconnect_backoff"`
	MaxBackoff       Duration    `yaml:"max_backoff"`
	TLS              UpstreamTLS `yaml:"tls"`
	// Sentinel, when its master is set, finds the primary through Valkey
	// Sentinel instead of addr, and follows failovers.
	Sentinel SentinelConfig `yaml:"sentinel"`
	// Cluster, when its seeds are set, puts lockproxy in front of a Valkey
	// Cluster instead of one primary (addr and sentinel must then be unset).
	Cluster ClusterConfig `yaml:"cluster"`
}

// ClusterConfig names a Valkey Cluster: any of its nodes will do as a seed,
// the rest of the topology is read from them (CLUSTER SHARDS).
type ClusterConfig struct {
	Seeds []string `yaml:"seeds"` // host:port of some of the cluster's nodes
	// Refresh is how often the slot map is read again when nothing asked
	// for it sooner (a MOVED, a node that cannot be reached). Default 10s.
	Refresh Duration `yaml:"refresh"`
}

// SentinelConfig names a master monitored by Sentinel.
type SentinelConfig struct {
	Master   string   `yaml:"master"`
	Addrs    []string `yaml:"addrs"` // sentinel addresses, host:port
	Username string   `yaml:"username"`
	Password string   `yaml:"password"`
}

// UpstreamTLS configures TLS to the upstream server. Relative file paths are
// resolved against the config file's directory by [Load] and [Parse].
type UpstreamTLS struct {
	Enabled            bool   `yaml:"enabled"`              // default false
	CAFile             string `yaml:"ca_file"`              // empty = system roots
	CertFile           string `yaml:"cert_file"`            // client certificate; needs key_file
	KeyFile            string `yaml:"key_file"`             // needs cert_file
	ServerName         string `yaml:"server_name"`          // empty = the host of upstream.addr
	InsecureSkipVerify bool   `yaml:"insecure_skip_verify"` // tests only: no certificate check
}

// ListenerTLS configures TLS on the client listener; TLS is on when CertFile
// is set. Relative paths are resolved against the config file's directory.
type ListenerTLS struct {
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
	// ClientCAFile, when set, makes client certificates required and verified
	// against it.
	ClientCAFile string `yaml:"client_ca_file"`
}

// ListenLoopback reports whether listen accepts only connections from
// this machine (a loopback address or localhost).
func (c *Config) ListenLoopback() bool {
	host, _, err := net.SplitHostPort(c.Listen)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Enabled reports whether the listener serves TLS.
func (t ListenerTLS) Enabled() bool { return t.CertFile != "" }

// AdminConfig is the proxy's own administrative interface.
type AdminConfig struct {
	// Password for the proxy's admin commands. Empty = no admin password set.
	Password string `yaml:"password"`
	// OpenRead lets every client run the read-only LOCKPROXY subcommands
	// (AUDIT, LOCKS, STATS, SESSIONS, CHECK, and INFO lockproxy) without a
	// login; CONFIG and RELOAD still need one.
	OpenRead bool `yaml:"open_read"`
	// Users are named admin logins (LOCKPROXY AUTH <name> <password>), each
	// with a role. Password, when also set, is one more user, "default",
	// with role operate.
	Users []AdminUser `yaml:"users"`
}

// AdminUser is one entry of admin.users. Exactly one of Password,
// PasswordSHA256 and PasswordFile is set; after [Load], a PasswordFile's
// content is in Password.
type AdminUser struct {
	Name     string `yaml:"name"`
	Password string `yaml:"password"`
	// PasswordSHA256 is the hex SHA-256 of the password, so the file need
	// not hold it in clear (printf %s 'pw' | sha256sum).
	PasswordSHA256 string `yaml:"password_sha256"`
	// PasswordFile names a file whose content (one trailing newline
	// dropped) is the password: a mounted Kubernetes Secret or a systemd
	// credential. Relative to the config file's directory; read again on
	// every reload.
	PasswordFile string    `yaml:"password_file"`
	Role         AdminRole `yaml:"role"` // default read
}

// DefaultAdminUser is the user admin.password logs in as.
const DefaultAdminUser = "default"

// MetricsConfig is the metrics endpoint.
type MetricsConfig struct {
	Listen string `yaml:"listen"` // host:port; empty (the default) = no metrics endpoint
	// Pprof serves Go's profiles under /debug/pprof/ on the metrics
	// endpoint, behind the admin credentials. Default false.
	Pprof bool `yaml:"pprof"`
}

// SlowlogConfig is the slow log: commands whose reply took at least
// Threshold, as the client saw it (first byte in to reply out), are
// logged and kept for LOCKPROXY SLOWLOG, by name and key count, never
// with their values.
type SlowlogConfig struct {
	// Threshold: 0 keeps every command; unset, DefaultSlowlogThreshold
	// (100ms). A reload applies it.
	Threshold *Duration `yaml:"threshold"`
	// MaxLen: how many entries LOCKPROXY SLOWLOG keeps, the newest.
	// Default 128; a reload applies it.
	MaxLen int `yaml:"max_len"`
}

// ThresholdOrDefault is the slow log's threshold (the default before
// ApplyDefaults ran).
func (s SlowlogConfig) ThresholdOrDefault() time.Duration {
	if s.Threshold == nil {
		return DefaultSlowlogThreshold.D()
	}
	return s.Threshold.D()
}

// Enumerations of process settings. Each is a string type so the file's
// word is the value and messages can quote it; the constants list every
// accepted word. The words of lock policy (release, session, on_flush ...)
// are package policy's.
type (
	LogLevel      string
	LogFormat     string
	AdminRole     string
	ClusterFace   string
	AdminCommands string
)

const (
	LogDebug LogLevel = "debug"
	LogInfo  LogLevel = "info"
	LogWarn  LogLevel = "warn"
	LogError LogLevel = "error"

	LogText LogFormat = "text"
	LogJSON LogFormat = "json"

	// What an admin user may run: read = every LOCKPROXY subcommand that
	// only reports (and INFO lockproxy); operate = those and RELOAD.
	AdminRead    AdminRole = "read"
	AdminOperate AdminRole = "operate"

	ClusterFaceHidden     ClusterFace = "hidden"      // CLUSTER commands answered as a standalone server
	ClusterFaceSingleNode ClusterFace = "single_node" // ... as one node owning all 16384 slots

	AdminCommandsAdmin   AdminCommands = "admin"   // only an admin of lockproxy's with role operate
	AdminCommandsRefuse  AdminCommands = "refuse"  // nobody through lockproxy
	AdminCommandsForward AdminCommands = "forward" // everybody, as Valkey would
)

// The accepted words of each enumeration, in the order messages list them.
var (
	logLevels    = []LogLevel{LogDebug, LogInfo, LogWarn, LogError}
	logFormats   = []LogFormat{LogText, LogJSON}
	clusterFaces = []ClusterFace{ClusterFaceHidden, ClusterFaceSingleNode}
	adminRoles   = []AdminRole{AdminRead, AdminOperate}
	adminCmds    = []AdminCommands{AdminCommandsAdmin, AdminCommandsRefuse, AdminCommandsForward}
)

// Default returns the configuration an empty file gives: every default
// applied and no lock rules (a pure pass-through proxy).
func Default() *Config {
	c := &Config{DrainDelay: DefaultDrainDelay}
	c.ApplyDefaults()
	return c
}

// ApplyDefaults replaces zero values by defaults, as Parse does for what a
// file leaves out. Negative values are left for validation to report.
func (c *Config) ApplyDefaults() {
	setZero(&c.Listen, DefaultListen)
	setZero(&c.MaxClients, DefaultMaxClients)
	setZero(&c.ProtoMaxBulkLen, DefaultProtoMaxBulkLen)
	setZero(&c.ClientQueryBufferLimit, DefaultClientQueryBufferLimit)
	setZero(&c.ClientOutputBufferLimit, DefaultClientOutputBufferLimit)
	setZero(&c.MaxPipeline, DefaultMaxPipeline)
	setZero(&c.EventLoops, DefaultEventLoops)
	setZero(&c.ShutdownTimeout, DefaultShutdownTimeout)
	setZero(&c.KeepLapsed, DefaultKeepLapsed)
	setZero(&c.Log.Level, LogInfo)
	setZero(&c.Log.Format, LogText)
	setZero(&c.Log.AuditMaxSize, 64*MB)
	setZero(&c.Log.AuditKeep, 5)
	u := &c.Upstream
	if len(u.Cluster.Seeds) == 0 {
		setZero(&u.Addr, DefaultUpstreamAddr) // with seeds, addr stays unset: they exclude each other
	}
	setZero(&c.ClusterFace, ClusterFaceHidden)
	setZero(&c.AdminCommands, AdminCommandsAdmin)
	setZero(&u.PoolSize, DefaultPoolSize)
	setZero(&u.DialTimeout, DefaultDialTimeout)
	setZero(&u.ReplyTimeout, DefaultReplyTimeout)
	setZero(&u.ReconnectBackoff, DefaultReconnectBackoff)
	setZero(&u.MaxBackoff, DefaultMaxBackoff)
	setZero(&u.Cluster.Refresh, DefaultClusterRefresh)
	setZero(&c.OnFlush, policy.FlushAllow)
	setZero(&c.Slowlog.MaxLen, DefaultSlowlogMaxLen)
	if c.Slowlog.Threshold == nil {
		d := DefaultSlowlogThreshold
		c.Slowlog.Threshold = &d
	}
	// A list written empty ([]) is the same as none.
	if len(u.Sentinel.Addrs) == 0 {
		u.Sentinel.Addrs = nil
	}
	if len(u.Cluster.Seeds) == 0 {
		u.Cluster.Seeds = nil
	}
	if len(c.Locks) == 0 {
		c.Locks = nil
	}
	if len(c.Admin.Users) == 0 {
		c.Admin.Users = nil
	}
	for i := range c.Locks {
		c.Locks[i].applyDefaults()
	}
	for i := range c.Admin.Users {
		setZero(&c.Admin.Users[i].Role, AdminRead)
	}
}

func setZero[T comparable](p *T, def T) {
	var zero T
	if *p == zero {
		*p = def
	}
}

// Load reads and parses the configuration file at path. Errors name the
// file and line (see [ConfigError]); all problems found are returned joined.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &ConfigError{File: path, Msg: err.Error()}
	}
	return Parse(path, data)
}

// Parse parses configuration data; name is the file name used in error
// messages and the base for relative TLS file paths. The result has defaults
// applied and is validated.
func Parse(name string, data []byte) (*Config, error) {
	c := &Config{}
	d := newDecoder(name)
	d.decodeFile(data, c)
	if len(d.errs) == 0 || d.root != nil {
		if _, set := d.positions["drain_delay"]; !set {
			c.DrainDelay = DefaultDrainDelay // 0 is a value of its own: no drain
		}
		c.ApplyDefaults()
		c.resolvePaths(name)
		v := &validator{file: name, at: d.at, skip: d.reported, errs: d.errs}
		c.validate(v)
		c.readSecrets(v)
		d.errs = v.errs
	}
	if err := joinErrors(d.errs); err != nil {
		return nil, err
	}
	return c, nil
}

// Redacted returns a deep copy of c with every non-empty secret replaced by
// "(redacted)", for logs and `config show`. Empty secrets stay empty, so the
// copy still tells whether one is set.
func (c *Config) Redacted() *Config {
	r := c.clone()
	redact(&r.Upstream.Password)
	redact(&r.Upstream.Sentinel.Password)
	redact(&r.Admin.Password)
	for i := range r.Admin.Users {
		redact(&r.Admin.Users[i].Password)
		redact(&r.Admin.Users[i].PasswordSHA256)
	}
	return r
}

func redact(s *string) {
	if *s != "" {
		*s = Redacted
	}
}

func (c *Config) clone() *Config {
	r := *c
	r.Locks = slices.Clone(c.Locks)
	r.Upstream.Sentinel.Addrs = slices.Clone(c.Upstream.Sentinel.Addrs)
	r.Upstream.Cluster.Seeds = slices.Clone(c.Upstream.Cluster.Seeds)
	r.Admin.Users = slices.Clone(c.Admin.Users)
	for i := range r.Locks {
		r.Locks[i] = r.Locks[i].clone()
	}
	return &r
}
