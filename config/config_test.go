package config

import (
	"errors"
	"github.com/lockproxy/lockproxy/policy"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

func TestExampleConfigParses(t *testing.T) {
	c, err := Load(filepath.Join("..", "config.example.yaml"))
	if err != nil {
		t.Fatalf("config.example.yaml: %v", err)
	}
	if c.Listen != "127.0.0.1:6380" || c.Upstream.Addr != "127.0.0.1:6379" {
		t.Errorf("listen %q upstream %q", c.Listen, c.Upstream.Addr)
	}
	if len(c.Locks) != 2 || c.Locks[0].Pattern != "*:lock" || c.Locks[0].Release != policy.ReleaseRewrite {
		t.Fatalf("locks = %+v, want a *:lock rewrite rule first", c.Locks)
	}
	if f := c.Locks[1].Fence; f == nil || f.Counter != "{base}:fence" || f.Check != policy.FenceCheckHighest {
		t.Fatalf("locks[1] = %+v, want the fenced example", c.Locks[1])
	}
	// The commented-out lines claim to be the defaults; with them all
	// uncommented the file must give the same configuration.
	raw, err := os.ReadFile(filepath.Join("..", "config.example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(string(raw), "\n") {
		trimmed := strings.TrimLeft(l, " ")
		indent := l[:len(l)-len(trimmed)]
		// "#key: value" and "#  key: value" (nested) are commented-out
		// settings; "# text" is prose.
		if strings.HasPrefix(trimmed, "#") && len(trimmed) > 1 && (trimmed[1] != ' ' || strings.HasPrefix(trimmed, "#  ")) {
			l = indent + trimmed[1:]
		}
		lines = append(lines, l)
	}
	all, err := Parse("uncommented.yaml", []byte(strings.Join(lines, "\n")))
	if err != nil {
		t.Fatalf("example with every option uncommented: %v", err)
	}
	if all.Locks[0].Fence == nil || all.Locks[0].Fence.Counter != "{base}:fence" {
		t.Fatalf("uncommenting did not reach the fence section: %+v", all.Locks[0])
	}
	// The optional sections that are examples, not defaults.
	if d := all.Locks[0].Durability; d == nil || d.Replicas != 1 {
		t.Fatalf("uncommenting did not reach the durability section: %+v", all.Locks[0])
	}
	all.Locks[0].Fence, all.Locks[0].Durability = nil, nil
	if len(all.Admin.Users) != 2 || all.Admin.Users[1].Role != AdminOperate {
		t.Fatalf("uncommenting did not reach admin.users: %+v", all.Admin.Users)
	}
	all.Admin.Users = nil
	if !reflect.DeepEqual(c, all) {
		t.Errorf("commented-out values are not the defaults:\n%+v\n%+v", c, all)
	}
}

// TestExampleShowsEveryOption keeps config.example.yaml complete as fields
// are added: every YAML key of the Config types must appear in it.
func TestExampleShowsEveryOption(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "config.example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	var walk func(reflect.Type)
	walk = func(rt reflect.Type) {
		for rt.Kind() == reflect.Pointer || rt.Kind() == reflect.Slice {
			rt = rt.Elem()
		}
		if rt.Kind() != reflect.Struct {
			return
		}
		for f := range rt.Fields() {
			keys = append(keys, strings.Split(f.Tag.Get("yaml"), ",")[0])
			walk(f.Type)
		}
	}
	walk(reflect.TypeFor[Config]())
	if len(keys) < 40 {
		t.Fatalf("found only %d keys; the walk is broken", len(keys))
	}
	for _, k := range keys {
		if !regexp.MustCompile(`(?m)^[\s#-]*` + k + `:`).Match(raw) {
			t.Errorf("config.example.yaml does not show %q", k)
		}
	}
}

func TestDefault(t *testing.T) {
	c := Default()
	checks := []struct {
		name      string
		got, want any
	}{
		{"listen", c.Listen, "127.0.0.1:6380"},
		{"maxclients", c.MaxClients, 10000},
		{"proto_max_bulk_len", c.ProtoMaxBulkLen, 512 * MB},
		{"client_query_buffer_limit", c.ClientQueryBufferLimit, GB},
		{"client_output_buffer_limit", c.ClientOutputBufferLimit, 256 * MB},
		{"max_pipeline", c.MaxPipeline, 100000},
		{"event_loops", c.EventLoops, 1},
		{"busy_poll", c.BusyPoll, Duration(0)},
		{"gomaxprocs", c.GOMAXPROCS, 0},
		{"shutdown_timeout", c.ShutdownTimeout, Duration(10 * time.Second)},
		{"client_idle_timeout", c.ClientIdleTimeout, Duration(0)},
		{"log.level", c.Log.Level, LogInfo},
		{"log.format", c.Log.Format, LogText},
		{"upstream.addr", c.Upstream.Addr, "127.0.0.1:6379"},
		{"upstream.pool_size", c.Upstream.PoolSize, 2},
		{"upstream.dial_timeout", c.Upstream.DialTimeout, Duration(5 * time.Second)},
		{"upstream.reply_timeout", c.Upstream.ReplyTimeout, Duration(30 * time.Second)},
		{"upstream.reconnect_backoff", c.Upstream.ReconnectBackoff, Duration(100 * time.Millisecond)},
		{"upstream.max_backoff", c.Upstream.MaxBackoff, Duration(5 * time.Second)},
		{"on_flush", c.OnFlush, policy.FlushAllow},
		{"locks", len(c.Locks), 0},
	}
	for _, ch := range checks {
		if !reflect.DeepEqual(ch.got, ch.want) {
			t.Errorf("%s = %v, want %v", ch.name, ch.got, ch.want)
		}
	}
	if err := c.Validate(); err != nil {
		t.Errorf("Default().Validate(): %v", err)
	}
	for _, empty := range []string{"", "# only a comment\n", "---\n", "~\n"} {
		got, err := Parse("empty.yaml", []byte(empty))
		if err != nil {
			t.Fatalf("Parse(%q): %v", empty, err)
		}
		if !reflect.DeepEqual(got, c) {
			t.Errorf("Parse(%q) differs from Default()", empty)
		}
	}
}

const fullConfig = `listen: 0.0.0.0:7000
maxclients: 50
proto_max_bulk_len: 64kb
client_query_buffer_limit: 2MB
client_output_buffer_limit: 1048576
max_pipeline: 10
event_loops: 3
busy_poll: 50us
gomaxprocs: 2
shutdown_timeout: 1m30s
drain_delay: 0s
client_idle_timeout: 5m
keep_lapsed: 2m
log: {level: debug, format: json}
upstream:
  addr: valkey.internal:6390
  username: proxy
  password: 0123
  db: 3
  pool_size: 4
  dial_timeout: 1s
  reply_timeout: 2s
  reconnect_backoff: 10ms
  max_backoff: 1s
  tls: {enabled: true, server_name: valkey.internal, insecure_skip_verify: true}
admin:
  password: s3cret
metrics:
  listen: :9100
on_flush: reject
locks:
  - pattern: "*:lock"
    release: reject
    session: client_name
    unknown_owner: forward
    scripts: observe
    unknown_sha: reject
    fence:
      counter: "{base}:fence"
      guards: ["{base}:a", "{base}:b"]
      check: highest
      unfenced_writes: observe
  - pattern: "lock:*"
`

func TestParseFull(t *testing.T) {
	c, err := Parse("full.yaml", []byte(fullConfig))
	if err != nil {
		t.Fatal(err)
	}
	want := &Config{
		Listen: "0.0.0.0:7000", MaxClients: 50,
		ProtoMaxBulkLen: 64 * KB, ClientQueryBufferLimit: 2 * MB, ClientOutputBufferLimit: 1 << 20,
		MaxPipeline: 10, EventLoops: 3, BusyPoll: Duration(50 * time.Microsecond), GOMAXPROCS: 2,
		ShutdownTimeout: Duration(90 * time.Second), ClientIdleTimeout: Duration(5 * time.Minute), KeepLapsed: Duration(2 * time.Minute),
		ClusterFace: ClusterFaceHidden, AdminCommands: AdminCommandsAdmin,
		Log: LogConfig{Level: LogDebug, Format: LogJSON, AuditMaxSize: 64 * MB, AuditKeep: 5},
		Upstream: UpstreamConfig{
			Addr: "valkey.internal:6390", Username: "proxy",
			Password: "0123", // the text as written: a password is not a number
			DB:       3, PoolSize: 4,
			DialTimeout: Duration(time.Second), ReplyTimeout: Duration(2 * time.Second),
			ReconnectBackoff: Duration(10 * time.Millisecond), MaxBackoff: Duration(time.Second),
			TLS:     UpstreamTLS{Enabled: true, ServerName: "valkey.internal", InsecureSkipVerify: true},
			Cluster: ClusterConfig{Refresh: DefaultClusterRefresh},
		},
		Admin:   AdminConfig{Password: "s3cret"},
		Metrics: MetricsConfig{Listen: ":9100"},
		Slowlog: SlowlogConfig{Threshold: new(DefaultSlowlogThreshold), MaxLen: DefaultSlowlogMaxLen},
		OnFlush: policy.FlushReject,
		Locks: []LockRule{
			{Pattern: "*:lock", Release: policy.ReleaseReject, Session: policy.SessionClientName,
				UnknownOwner: policy.UnknownOwnerForward, Scripts: policy.ScriptsObserve, UnknownSHA: policy.UnknownSHAReject,
				Fence: &FenceConfig{Counter: "{base}:fence", Guards: []string{"{base}:a", "{base}:b"},
					Check: policy.FenceCheckHighest, Mark: policy.FenceMarkLock, UnfencedWrites: policy.UnfencedObserve}},
			{Pattern: "lock:*", Release: policy.ReleaseRewrite, Session: policy.SessionConnection,
				UnknownOwner: policy.UnknownOwnerRefuse, UnknownSHA: policy.UnknownSHAAllow},
		},
	}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("got  %+v\nwant %+v", c, want)
	}

	// Marshalled back (how a redacted config will be shown) it must parse to
	// the same configuration.
	out, err := yaml.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Parse("marshalled.yaml", out)
	if err != nil {
		t.Fatalf("re-parse of marshalled config: %v\n%s", err, out)
	}
	if !reflect.DeepEqual(again, c) {
		t.Errorf("round trip changed the config:\n%s", out)
	}
}

func TestRedacted(t *testing.T) {
	c, err := Parse("full.yaml", []byte(fullConfig))
	if err != nil {
		t.Fatal(err)
	}
	r := c.Redacted()
	if r.Upstream.Password != Redacted || r.Admin.Password != Redacted {
		t.Errorf("secrets not redacted: %q %q", r.Upstream.Password, r.Admin.Password)
	}
	if c.Upstream.Password != "0123" || c.Admin.Password != "s3cret" {
		t.Error("Redacted changed the original")
	}
	out, _ := yaml.Marshal(r)
	if strings.Contains(string(out), "s3cret") || strings.Contains(string(out), "0123") {
		t.Errorf("marshalled redacted config leaks a secret:\n%s", out)
	}
	// A deep copy: changing the copy's rules must not reach the original.
	r.Locks[0].Fence.Guards[0] = "changed"
	r.Locks[0].Pattern = "changed"
	if c.Locks[0].Fence.Guards[0] != "{base}:a" || c.Locks[0].Pattern != "*:lock" {
		t.Error("Redacted shares lock rules with the original")
	}
	if d := Default().Redacted(); d.Upstream.Password != "" || d.Admin.Password != "" {
		t.Error("empty secrets must stay empty so the display shows none is set")
	}
}

func TestParseErrors(t *testing.T) {
	cases := []struct {
		name, yaml string
		want       []string // every error, in order
	}{
		{"bad enum", "listen: 127.0.0.1:6380\nlocks:\n  - pattern: \"*:lock\"\n    release: delete\n",
			[]string{`c.yaml:4: locks[0].release: "delete" is not one of rewrite, reject, observe`}},
		{"unknown key with suggestion", "max_clients: 5\n",
			[]string{`c.yaml:1: max_clients: unknown key (did you mean maxclients?)`}},
		{"valkey.conf spelling", "proto-max-bulk-len: 1mb\n",
			[]string{`c.yaml:1: proto-max-bulk-len: unknown key (did you mean proto_max_bulk_len?)`}},
		{"unknown key far from any", "upstream:\n  zzzzzzzz: 1\n",
			[]string{`c.yaml:2: upstream.zzzzzzzz: unknown key; known keys here: addr, username, password, password_file, db, pool_size, dial_timeout, reply_timeout, reconnect_backoff, max_backoff, tls, sentinel, cluster`}},
		{"repeated key", "listen: a:1\nlisten: b:2\n",
			[]string{`c.yaml:2: listen: repeated; it is already set on line 1`}},
		{"wrong type int", "maxclients: lots\n",
			[]string{`c.yaml:1: maxclients: "lots" is not a whole number`}},
		{"wrong type list", "listen: [a, b]\n",
			[]string{`c.yaml:1: listen: expected a string, got a list`}},
		{"section not mapping", "log: loud\n",
			[]string{`c.yaml:1: log: expected a mapping (key: value lines), got the value "loud"`}},
		{"bad size", "proto_max_bulk_len: 512 mb\n",
			[]string{`c.yaml:1: proto_max_bulk_len: "512 mb" has an unknown unit " mb"; use b, k, kb, m, mb, g or gb (kb/mb/gb are 1024-based, k/m/g 1000-based, as in valkey.conf)`}},
		{"size over query limit", "proto_max_bulk_len: 2gb\n",
			[]string{`c.yaml:1: proto_max_bulk_len: 2gb is larger than client_query_buffer_limit (1gb), so a bulk string that size could never be received`}},
		{"duration without unit", "shutdown_timeout: 10\n",
			[]string{`c.yaml:1: shutdown_timeout: 10 has no unit; write e.g. 10s or 10ms`}},
		{"negative duration", "upstream:\n  dial_timeout: -1s\n",
			[]string{`c.yaml:2: upstream.dial_timeout: -1s is negative`}},
		{"event loops", "event_loops: -2\n",
			[]string{`c.yaml:1: event_loops: -2 is not a number of event loops: use 1 or more (a goroutine per client is no longer an engine of its own)`}},
		{"goroutine per client", "event_loops: -1\n",
			[]string{`c.yaml:1: event_loops: -1 is not a number of event loops: use 1 or more (a goroutine per client is no longer an engine of its own)`}},
		{"busy poll too long", "busy_poll: 5ms\n",
			[]string{`c.yaml:1: busy_poll: 5ms is longer than 1ms: a loop polling that long between rounds keeps a core busy for nothing; 50us is typical`}},
		{"negative busy poll", "busy_poll: -1us\n",
			[]string{`c.yaml:1: busy_poll: -1us is negative`}},
		{"negative count", "maxclients: -1\n",
			[]string{`c.yaml:1: maxclients: -1 is negative (0 means the default, 10000)`}},
		{"bool", "upstream:\n  tls:\n    enabled: maybe\n",
			[]string{`c.yaml:3: upstream.tls.enabled: "maybe" is not true or false`}},
		{"int as float", "upstream:\n  db: 1.5\n",
			[]string{`c.yaml:2: upstream.db: "1.5" is not a whole number`}},
		{"empty element of a string list", "upstream:\n  sentinel:\n    master: m\n    addrs: [\"h:1\", ~]\n",
			[]string{`c.yaml:4:20: upstream.sentinel.addrs[1]: expected a host:port address, got the value "~"`}},
		{"several errors on one flow line", "upstream: {db: x, pool_size: y, dial_timeout: 5}\n",
			[]string{`c.yaml:1:16: upstream.db: "x" is not a whole number`,
				`c.yaml:1:30: upstream.pool_size: "y" is not a whole number`,
				`c.yaml:1:47: upstream.dial_timeout: 5 has no unit; write e.g. 5s or 5ms`}},
		{"unknown key in a lock rule", "locks:\n  - pattern: a:*\n    relase: reject\n",
			[]string{`c.yaml:3: locks[0].relase: unknown key (did you mean release?)`}},
		{"listen not host:port", "listen: 6380\n",
			[]string{`c.yaml:1: listen: "6380" is not host:port (e.g. 127.0.0.1:6380)`}},
		{"upstream without host", "upstream: {addr: \":6379\"}\n",
			[]string{`c.yaml:1:18: upstream.addr: ":6379" has no host (e.g. 127.0.0.1:6379)`}},
		{"port range", "upstream:\n  addr: h:70000\n",
			[]string{`c.yaml:2: upstream.addr: "h:70000": port "70000" is not a number from 1 to 65535`}},
		{"flow collection gets columns", "log: {level: loud, format: jsn}\n",
			[]string{`c.yaml:1:14: log.level: "loud" is not one of debug, info, warn, error`,
				`c.yaml:1:28: log.format: "jsn" is not one of text, json`}},
		{"missing pattern points at the rule", "locks:\n  - release: reject\n",
			[]string{`c.yaml:2: locks[0].pattern: is required: the glob of the keys this rule protects, e.g. "*:lock"`}},
		{"empty list item", "locks:\n  -\n",
			[]string{`c.yaml:2: locks[0]: expected a lock rule (pattern: ..., release: ...), got the value ""`}},
		{"bad pattern", "locks:\n  - pattern: \"lock[abc\"\n",
			[]string{`c.yaml:2: locks[0].pattern: "lock[abc": "[" at offset 4 has no closing "]"; write \[ to match a literal "["`}},
		{"duplicate and shadowed rules", "locks:\n  - pattern: \"*:lock\"\n  - pattern: \"*\"\n  - pattern: \"*:lock\"\n  - pattern: \"x:*\"\n",
			[]string{`c.yaml:4: locks[2].pattern: "*:lock" repeats locks[0]; the first matching rule wins, so this one is never used`,
				`c.yaml:5: locks[3].pattern: is never used: locks[1] ("*") matches every key first`}},
		{"fence shape", "locks:\n  - pattern: a:*\n    fence:\n      guards: \"{base}\"\n      check: newest\n",
			[]string{`c.yaml:3: locks[0].fence.counter: is required when fence is set: the key template of the fencing counter`,
				`c.yaml:4: locks[0].fence.guards: expected a list of key templates, got the value "{base}"`,
				`c.yaml:5: locks[0].fence.check: "newest" is not one of current, highest`}},
		{"upstream tls files while disabled", "upstream:\n  tls:\n    server_name: x\n",
			[]string{`c.yaml:3: upstream.tls.server_name: is set but upstream.tls.enabled is false; set enabled: true to use TLS to the upstream`}},
		{"client ca without cert", "tls:\n  client_ca_file: /\n",
			[]string{`c.yaml:2: tls.client_ca_file: needs tls.cert_file and tls.key_file: client certificates can only be checked on a TLS listener`,
				`c.yaml:2: tls.client_ca_file: "/" is a directory, not a file`}},
		{"top level not a mapping", "- a\n- b\n",
			[]string{`c.yaml:1: the top level must be a mapping of settings (key: value), not a list`}},
		{"yaml syntax", "listen: a\n  bad: indent\n",
			[]string{`c.yaml:2: invalid YAML: mapping values are not allowed in this context`}},
		{"control character", "listen: a\nlog:\x07\n",
			[]string{`c.yaml:2: control character 0x07; YAML allows only printable text`}},
		{"invalid utf-8", "# ok\n# ok\nlisten: \xff\n",
			[]string{`c.yaml:3: byte 0xff is not valid UTF-8; the file must be UTF-8 text`}},
		{"two documents", "listen: a:1\n---\nlisten: b:2\n",
			[]string{`c.yaml:2: a second YAML document (after ---); the configuration is one document`}},
		{"unquoted glob", "locks:\n  - pattern: *:lock\n    fence:\n      counter: {base}:fence # why\n",
			[]string{`c.yaml:2: invalid YAML: did not find expected alphabetic or numeric character`,
				`c.yaml:2: pattern: *:lock must be quoted: YAML reads a leading "*" as an alias; write pattern: "*:lock"`,
				`c.yaml:4: counter: {base}:fence must be quoted: YAML reads a leading "{" as the start of a mapping; write counter: "{base}:fence"`}},
		{"unknown alias", "admin:\n  password: *pw\n",
			[]string{`c.yaml:2: invalid YAML: unknown anchor 'pw' referenced`}},
		{"syntax error on line 1", "{\n",
			[]string{`c.yaml:1: invalid YAML: did not find expected node content`}},
		{"alias merge refused", "log:\n  <<: {level: info}\n",
			[]string{`c.yaml:2: log: merge keys (<<) are not supported; write the settings out`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := Parse("c.yaml", []byte(c.yaml))
			if err == nil {
				t.Fatalf("no error; config %+v", cfg)
			}
			if cfg != nil {
				t.Error("a config was returned alongside errors")
			}
			var got []string
			for _, e := range ConfigErrors(err) {
				got = append(got, e.Error())
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("errors:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(c.want, "\n  "))
			}
			if err.Error() != strings.Join(c.want, "\n") {
				t.Errorf("err.Error() = %q", err.Error())
			}
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.File != "c.yaml" || ce.Line == 0 {
				t.Errorf("errors.As: %+v", ce)
			}
		})
	}
}

func TestAliases(t *testing.T) {
	// Anchors and aliases are plain YAML; a value can be shared.
	c, err := Parse("a.yaml", []byte("admin: {password: &pw hunter2}\nupstream: {password: *pw}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Admin.Password != "hunter2" || c.Upstream.Password != "hunter2" {
		t.Errorf("aliases: %q %q", c.Admin.Password, c.Upstream.Password)
	}
}

func TestParseReportsAllErrors(t *testing.T) {
	data := "listen: nope\nmaxclients: x\nlog:\n  level: loud\nbogus: 1\nlocks:\n  - pattern: \"\"\n    release: delete\n"
	_, err := Parse("multi.yaml", []byte(data))
	var lines []int
	for _, e := range ConfigErrors(err) {
		lines = append(lines, e.Line)
	}
	if want := []int{1, 2, 4, 5, 7, 8}; !reflect.DeepEqual(lines, want) {
		t.Errorf("error lines %v, want %v:\n%v", lines, want, err)
	}
}

func TestTLSFiles(t *testing.T) {
	dir := t.TempDir()
	cert, key := writePair(t, dir, "pair")
	for f, from := range map[string]string{"cert.pem": cert, "key.pem": key, "ca.pem": cert} {
		b, err := os.ReadFile(from)
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, f), b, 0o600)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, "lockproxy.yaml")
	// Relative names resolve against the config file's directory, wherever
	// the process runs from.
	good := "tls:\n  cert_file: cert.pem\n  key_file: key.pem\n  client_ca_file: ca.pem\nupstream:\n  tls:\n    enabled: true\n    ca_file: " + filepath.Join(dir, "ca.pem") + "\n"
	if err := os.WriteFile(path, []byte(good), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if c.TLS.CertFile != filepath.Join(dir, "cert.pem") || c.TLS.ClientCAFile != filepath.Join(dir, "ca.pem") || !c.TLS.Enabled() {
		t.Errorf("paths not resolved: %+v", c.TLS)
	}

	bad := "tls:\n  cert_file: cert.pem\nupstream:\n  tls:\n    enabled: true\n    key_file: missing.pem\n"
	_, err = Parse(path, []byte(bad))
	want := []string{
		path + `:2: tls.key_file: is required when tls.cert_file is set`,
		path + `:6: upstream.tls.cert_file: is required when upstream.tls.key_file is set`,
		path + `:6: upstream.tls.key_file: "` + filepath.Join(dir, "missing.pem") + `" does not exist`,
	}
	var got []string
	for _, e := range ConfigErrors(err) {
		got = append(got, e.Error())
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "nope.yaml"))
	var ce *ConfigError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "nope.yaml: open ") {
		t.Errorf("Load of a missing file: %v", err)
	}
}

func TestValidateInCode(t *testing.T) {
	c := &Config{Listen: "bad", Locks: []LockRule{{Pattern: "a:*", Session: "nobody"}}}
	err := c.Validate()
	var got []string
	for _, e := range ConfigErrors(err) {
		got = append(got, e.Error())
	}
	want := []string{
		`listen: "bad" is not host:port (e.g. 127.0.0.1:6380)`,
		`locks[0].session: "nobody" is not one of connection, client_name, client_addr, user`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
	if c.MaxClients != 0 {
		t.Error("Validate changed its receiver")
	}
}

func TestSizes(t *testing.T) {
	good := map[string]Size{
		"0": 0, "1": 1, "100b": 100, "1k": 1000, "1kb": 1024, "64KB": 64 << 10,
		"1m": 1000000, "512mb": 512 << 20, "1g": 1e9, "1gb": 1 << 30, "3Gb": 3 << 30,
	}
	for s, want := range good {
		got, err := ParseSize(s)
		if err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
	for _, s := range []string{"", "mb", "-1", "1.5gb", "1 mb", "1tb", "99999999999gb", "0x10"} {
		if got, err := ParseSize(s); err == nil {
			t.Errorf("ParseSize(%q) = %d, want an error", s, got)
		}
	}
	for _, s := range []Size{0, 1, 1000, KB, 1536, MB, 3 * MB, GB, 5 * GB, GB + 1} {
		back, err := ParseSize(s.String())
		if err != nil || back != s {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", s.String(), back, err, s)
		}
	}
	if s := (512 * MB).String(); s != "512mb" {
		t.Errorf("String() = %q", s)
	}
}

func TestDurations(t *testing.T) {
	good := map[string]time.Duration{"0": 0, "0s": 0, "100ms": 100 * time.Millisecond, "1m30s": 90 * time.Second}
	for s, want := range good {
		if got, err := parseDuration(s); err != nil || got != want {
			t.Errorf("parseDuration(%q) = %v, %v", s, got, err)
		}
	}
	for _, s := range []string{"10", "1.5", "-1s", "soon", ""} {
		if _, err := parseDuration(s); err == nil {
			t.Errorf("parseDuration(%q) accepted", s)
		}
	}
}

// FuzzParse: whatever the bytes, Parse returns a config or errors that each
// name a line, never panics, and an accepted config is valid and survives a
// marshal round trip.
func FuzzParse(f *testing.F) {
	f.Add([]byte(fullConfig))
	if ex, err := os.ReadFile(filepath.Join("..", "config.example.yaml")); err == nil {
		f.Add(ex)
	}
	for _, s := range []string{"", "listen: a:1\n", "log: {level: x}", "locks: [{pattern: '[a'}]", "a: &x [*x]", "- - -", "{", "locks:\n- pattern: *a\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse("fuzz.yaml", data)
		if err != nil {
			if c != nil {
				t.Fatal("config and error both returned")
			}
			errs := ConfigErrors(err)
			if len(errs) == 0 {
				t.Fatalf("error is not a *ConfigError: %v", err)
			}
			for _, e := range errs {
				if e.Line <= 0 || e.File != "fuzz.yaml" {
					t.Fatalf("error without a line: %q", e.Error())
				}
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("Parse accepted a config Validate refuses: %v", err)
		}
		out, err := yaml.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		again, err := Parse("fuzz.yaml", out)
		if err != nil || !reflect.DeepEqual(again, c) {
			t.Fatalf("round trip: %v\n%s", err, out)
		}
	})
}
