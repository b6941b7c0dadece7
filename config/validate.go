package config

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/lockproxy/lockproxy/policy"
)

// validator collects the problems that need the whole decoded Config to see
// (ranges, enums, cross-field rules, files on disk), placing each at the line
// the decoder recorded for its path.
type validator struct {
	file string
	at   func(string) pos // nil for a Config built in code
	skip map[string]bool  // paths the decoder already reported
	errs []*ConfigError
}

func (v *validator) errf(path, format string, args ...any) {
	v.errfAt(path, path, format, args...)
}

// errfAt reports a problem with path at the line of another setting, the
// one whose presence caused it (a key_file without its cert_file).
func (v *validator) errfAt(at, path, format string, args ...any) {
	// A value decoding refused, or anything under it, already has its
	// message; a second one about the default left in its place would only
	// confuse.
	for p := path; ; {
		if v.skip[p] {
			return
		}
		i := strings.LastIndexAny(p, ".[")
		if i < 0 {
			break
		}
		p = p[:i]
	}
	e := &ConfigError{File: v.file, Msg: path + ": " + fmt.Sprintf(format, args...)}
	if v.at != nil {
		p := v.at(at)
		e.Line, e.Col = p.line, p.col
	}
	v.errs = append(v.errs, e)
}

// Validate checks a Config built or changed in code, as Parse checks a file:
// zero values stand for their defaults, and errors carry no line numbers.
func (c *Config) Validate() error {
	cc := c.clone()
	cc.ApplyDefaults()
	v := &validator{}
	cc.validate(v)
	return joinErrors(v.errs)
}

func (c *Config) validate(v *validator) {
	checkAddr(v, "listen", c.Listen, true)
	nonNegative(v, "maxclients", c.MaxClients, "the default, 10000")
	positiveSize(v, "proto_max_bulk_len", c.ProtoMaxBulkLen)
	positiveSize(v, "client_query_buffer_limit", c.ClientQueryBufferLimit)
	positiveSize(v, "client_output_buffer_limit", c.ClientOutputBufferLimit)
	if c.ProtoMaxBulkLen > c.ClientQueryBufferLimit {
		v.errf("proto_max_bulk_len", "%s is larger than client_query_buffer_limit (%s), so a bulk string that size could never be received",
			c.ProtoMaxBulkLen, c.ClientQueryBufferLimit)
	}
	nonNegative(v, "max_pipeline", c.MaxPipeline, "the default, 100000")
	if c.EventLoops < 1 {
		v.errf("event_loops", "%d is not a number of event loops: use 1 or more (a goroutine per client is no longer an engine of its own)", c.EventLoops)
	}
	if c.BusyPoll > MaxBusyPoll {
		v.errf("busy_poll", "%s is longer than %s: a loop polling that long between rounds keeps a core busy for nothing; 50us is typical", c.BusyPoll, MaxBusyPoll)
	}
	nonNegative(v, "gomaxprocs", c.GOMAXPROCS, "Go's default")
	nonNegative(v, "slowlog.max_len", c.Slowlog.MaxLen, "the default, 128")
	if c.Slowlog.MaxLen > MaxSlowlogLen {
		v.errf("slowlog.max_len", "%d is more than %d entries: the slow log is kept in memory; 128 is typical", c.Slowlog.MaxLen, MaxSlowlogLen)
	}
	for _, d := range []struct {
		path string
		d    Duration
	}{
		{"shutdown_timeout", c.ShutdownTimeout},
		{"drain_delay", c.DrainDelay},
		{"client_idle_timeout", c.ClientIdleTimeout},
		{"keep_lapsed", c.KeepLapsed},
		{"busy_poll", c.BusyPoll},
		{"upstream.dial_timeout", c.Upstream.DialTimeout},
		{"upstream.reply_timeout", c.Upstream.ReplyTimeout},
		{"upstream.reconnect_backoff", c.Upstream.ReconnectBackoff},
		{"upstream.max_backoff", c.Upstream.MaxBackoff},
		{"upstream.cluster.refresh", c.Upstream.Cluster.Refresh},
	} {
		if d.d < 0 {
			v.errf(d.path, "%s is negative", d.d)
		}
	}
	oneOf(v, "log.level", c.Log.Level, logLevels)
	oneOf(v, "log.format", c.Log.Format, logFormats)

	u := &c.Upstream
	if len(u.Cluster.Seeds) == 0 || u.Addr != "" {
		checkAddr(v, "upstream.addr", u.Addr, false)
	}
	validateCluster(v, c)
	nonNegative(v, "upstream.db", u.DB, "database 0")
	nonNegative(v, "upstream.pool_size", u.PoolSize, "the default, 2")
	if u.MaxBackoff < u.ReconnectBackoff {
		v.errf("upstream.max_backoff", "%s is shorter than upstream.reconnect_backoff (%s); the backoff doubles from reconnect_backoff up to max_backoff",
			u.MaxBackoff, u.ReconnectBackoff)
	}
	if st := &u.Sentinel; st.Master != "" || len(st.Addrs) > 0 {
		if st.Master == "" {
			v.errf("upstream.sentinel.master", "is required with sentinel addrs: the name Sentinel monitors the primary under")
		}
		if len(st.Addrs) == 0 {
			v.errf("upstream.sentinel.addrs", "is required with a sentinel master: at least one Sentinel host:port")
		}
		for i, a := range st.Addrs {
			checkAddr(v, fmt.Sprintf("upstream.sentinel.addrs[%d]", i), a, false)
		}
	}
	t := &u.TLS
	if !t.Enabled {
		// Certificates configured while TLS is off almost certainly mean the
		// operator believes the upstream link is encrypted; say so rather
		// than send the password in clear.
		for _, f := range []struct {
			path string
			set  bool
		}{
			{"upstream.tls.ca_file", t.CAFile != ""},
			{"upstream.tls.cert_file", t.CertFile != ""},
			{"upstream.tls.key_file", t.KeyFile != ""},
			{"upstream.tls.server_name", t.ServerName != ""},
			{"upstream.tls.insecure_skip_verify", t.InsecureSkipVerify},
		} {
			if f.set {
				v.errf(f.path, "is set but upstream.tls.enabled is false; set enabled: true to use TLS to the upstream")
			}
		}
	}
	pairFiles(v, "upstream.tls", t.CertFile, t.KeyFile)
	checkCAFile(v, "upstream.tls.ca_file", t.CAFile)

	pairFiles(v, "tls", c.TLS.CertFile, c.TLS.KeyFile)
	if c.TLS.ClientCAFile != "" && c.TLS.CertFile == "" {
		v.errf("tls.client_ca_file", "needs tls.cert_file and tls.key_file: client certificates can only be checked on a TLS listener")
	}
	checkCAFile(v, "tls.client_ca_file", c.TLS.ClientCAFile)

	validateAdminUsers(v, &c.Admin)

	if c.Metrics.Listen != "" {
		checkAddr(v, "metrics.listen", c.Metrics.Listen, true)
	}
	oneOf(v, "on_flush", c.OnFlush, policy.FlushPolicies())
	oneOf(v, "admin_commands", c.AdminCommands, adminCmds)
	validateLocks(v, c)
}

// validateCluster checks upstream.cluster and cluster_face. A cluster is
// its own upstream: an addr or a Sentinel beside it would leave two answers
// to "where do commands go", and a cluster has database 0 only.
func validateCluster(v *validator, c *Config) {
	u := &c.Upstream
	oneOf(v, "cluster_face", c.ClusterFace, clusterFaces)
	if len(u.Cluster.Seeds) == 0 {
		if c.ClusterFace == ClusterFaceSingleNode {
			v.errf("cluster_face", "single_node needs upstream.cluster: without a cluster behind it, use the default, hidden")
		}
		return
	}
	for i, a := range u.Cluster.Seeds {
		checkAddr(v, fmt.Sprintf("upstream.cluster.seeds[%d]", i), a, false)
	}
	if u.Addr != "" {
		v.errf("upstream.addr", "cannot be set with upstream.cluster: the cluster's nodes are found from its seeds; remove addr")
	}
	if u.Sentinel.Master != "" || len(u.Sentinel.Addrs) > 0 {
		v.errf("upstream.sentinel", "cannot be set with upstream.cluster: a cluster fails over by itself; remove sentinel")
	}
	if u.DB != 0 {
		v.errf("upstream.db", "%d cannot be used with upstream.cluster: a cluster has database 0 only", u.DB)
	}
}

// validateAdminUsers checks admin.users: each user can log in with
// LOCKPROXY AUTH <name> <password>, and no name is taken twice.
func validateAdminUsers(v *validator, a *AdminConfig) {
	first := map[string]string{}
	if a.Password != "" {
		first[DefaultAdminUser] = "admin.password"
	}
	for i, u := range a.Users {
		p := fmt.Sprintf("admin.users[%d]", i)
		switch {
		case u.Name == "":
			v.errf(p+".name", "is required: the name given to LOCKPROXY AUTH <name> <password>")
		case strings.IndexFunc(u.Name, func(r rune) bool { return r <= ' ' || r == 0x7f }) >= 0:
			v.errf(p+".name", "%s contains a space or control character; valkey-cli could not send it as one argument", strconv.Quote(u.Name))
		case first[u.Name] != "":
			v.errf(p+".name", "%s is already the name of %s; each user needs a name of its own", strconv.Quote(u.Name), first[u.Name])
		default:
			first[u.Name] = p
		}
		switch {
		case u.Password == "" && u.PasswordSHA256 == "" && u.PasswordFile == "":
			v.errf(p+".password", "is required: set password, or password_sha256 to the hex SHA-256 of the password")
		case u.Password != "" && u.PasswordSHA256 != "":
			v.errf(p+".password_sha256", "is set together with password; keep one of them")
		case u.PasswordFile != "" && (u.Password != "" || u.PasswordSHA256 != ""):
			v.errf(p+".password_file", "is set together with password or password_sha256; keep one of them")
		case u.PasswordSHA256 != "" && !isSHA256Hex(u.PasswordSHA256):
			v.errf(p+".password_sha256", "is not 64 hexadecimal digits (the output of: printf %%s 'password' | sha256sum)")
		}
		oneOf(v, p+".role", u.Role, adminRoles)
	}
}

func isSHA256Hex(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, r := range s {
		if !strings.ContainsRune("0123456789abcdefABCDEF", r) {
			return false
		}
	}
	return true
}

func oneOf[T ~string](v *validator, path string, val T, allowed []T) {
	if msg := policy.NotOneOf(val, allowed); msg != "" {
		v.errf(path, "%s", msg)
	}
}

// nonNegative reports a negative count; zeroMeans says what 0 would give,
// since 0 is usually what the writer wanted.
func nonNegative(v *validator, path string, n int, zeroMeans string) {
	if n < 0 {
		v.errf(path, "%d is negative (0 means %s)", n, zeroMeans)
	}
}

func positiveSize(v *validator, path string, s Size) {
	if s <= 0 {
		v.errf(path, "must be a positive size")
	}
}

// checkAddr requires host:port with a numeric port. A listener may leave the
// host empty (all interfaces) and use port 0 (any free port); the upstream
// needs both.
func checkAddr(v *validator, path, addr string, listener bool) {
	example := "127.0.0.1:6379"
	if listener {
		example = "127.0.0.1:6380"
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		v.errf(path, "%s is not host:port (e.g. %s)", strconv.Quote(addr), example)
		return
	}
	if host == "" && !listener {
		v.errf(path, "%s has no host (e.g. %s)", strconv.Quote(addr), example)
		return
	}
	n, err := strconv.Atoi(port)
	lowest := 1
	if listener {
		lowest = 0
	}
	if err != nil || n < lowest || n > 65535 {
		v.errf(path, "%s: port %s is not a number from %d to 65535", strconv.Quote(addr), strconv.Quote(port), lowest)
	}
}

// pairFiles: a certificate is useless without its key and the reverse.
func pairFiles(v *validator, section, cert, key string) {
	switch {
	case cert != "" && key == "":
		v.errfAt(section+".cert_file", section+".key_file", "is required when %s.cert_file is set", section)
	case cert == "" && key != "":
		v.errfAt(section+".key_file", section+".cert_file", "is required when %s.key_file is set", section)
	}
	okCert := checkFile(v, section+".cert_file", cert)
	okKey := checkFile(v, section+".key_file", key)
	if cert != "" && key != "" && okCert && okKey {
		if _, err := tls.LoadX509KeyPair(cert, key); err != nil {
			v.errf(section+".cert_file", "%s and %s (key_file) cannot be used together: %v", strconv.Quote(cert), strconv.Quote(key), err)
		}
	}
}

// checkCAFile: a CA file must hold at least one PEM certificate.
func checkCAFile(v *validator, path, name string) {
	if !checkFile(v, path, name) || name == "" {
		return
	}
	data, err := os.ReadFile(name)
	if err != nil {
		v.errf(path, "%v", err)
		return
	}
	if !x509.NewCertPool().AppendCertsFromPEM(data) {
		v.errf(path, "%s holds no PEM certificate", strconv.Quote(name))
	}
}

// checkFile reports a configured file that cannot be used, so that
// check-config catches it before the proxy starts; it reports whether the
// file (when set) can be read.
func checkFile(v *validator, path, name string) bool {
	if name == "" {
		return true
	}
	fi, err := os.Stat(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		v.errf(path, "%s does not exist", strconv.Quote(name))
	case err != nil:
		v.errf(path, "%v", err)
	case fi.IsDir():
		v.errf(path, "%s is a directory, not a file", strconv.Quote(name))
	default:
		f, err := os.Open(name)
		if err != nil {
			v.errf(path, "%s cannot be read: %v", strconv.Quote(name), err)
			return false
		}
		f.Close()
		return true
	}
	return false
}

// resolvePaths makes relative file paths relative to the config file's
// directory, so that the proxy (or check-config) finds the same files
// whatever directory it is started from.
func (c *Config) resolvePaths(configFile string) {
	dir := filepath.Dir(configFile)
	for _, p := range []*string{
		&c.Upstream.TLS.CAFile, &c.Upstream.TLS.CertFile, &c.Upstream.TLS.KeyFile,
		&c.TLS.CertFile, &c.TLS.KeyFile, &c.TLS.ClientCAFile, &c.Upstream.PasswordFile,
	} {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(dir, *p)
		}
	}
	for i := range c.Admin.Users {
		if p := &c.Admin.Users[i].PasswordFile; *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(dir, *p)
		}
	}
}
