package admin

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/lockproxy/lockproxy/rewrite"
	"github.com/redis/go-redis/v9"
)

// Check is one finding of [Admin.CheckUpstream].
type Check struct {
	OK     bool
	What   string // what was tried
	Detail string // what happened, and on failure what to fix
}

// Upstream is what checking the upstream needs of the proxy beyond Host:
// where and how it connects, a connection's check, and serving clients.
type Upstream struct {
	// Where is the address new connections go to (Sentinel asked by
	// ctx's deadline).
	Where func(ctx context.Context) (string, error)
	TLS   bool   // upstream TLS is on
	User  string // the proxy's ACL user
	// Password is the proxy's password upstream: a client of the proxy
	// logs in with it where Valkey requires a login (requirepass).
	Password string
	Cluster  bool // in front of a cluster
	// Connect connects to addr as a shared connection does (TLS, the
	// proxy's login), sends PING, tries the rights lockproxy needs, and
	// says whether Valkey was usable, and if not why (/readyz's text: the
	// reason word, the setting; a missing right named as ACL SETUSER
	// spells it).
	Connect func(ctx context.Context, addr string) (ok bool, why string)
	// Serve serves clients on l until it is closed: the proxy itself.
	Serve        func(l net.Listener) error
	ReplyTimeout time.Duration
}

// CheckUpstream connects to Valkey as the configuration says and tries
// what lockproxy will need there: the connection (TLS, login), PING,
// Valkey's command table (COMMAND, needed with lock rules or a cluster),
// loading lockproxy's scripts (SCRIPT LOAD; without it they are sent whole
// by EVAL), and for each lock rule one lock's cycle through the proxy on
// a key the rule matches (SET NX PX, PEXPIRE, DEL; the key is removed,
// and lives 10 s at most), then a read of the locks' index: the ACL
// rights and key patterns the rules need.
// It writes to Valkey only that key and lockproxy's records of it. It ends
// by ctx's deadline, whatever Valkey does: a check cut short fails.
func (a *Admin) CheckUpstream(ctx context.Context, u Upstream) []Check {
	var out []Check
	add := func(ok bool, what, detail string) { out = append(out, Check{ok, what, detail}) }
	addr, err := u.Where(ctx)
	if err != nil {
		msg := err.Error()
		if !strings.Contains(msg, "; check ") { // a SetupError names its setting
			msg += "; check upstream.sentinel"
		}
		add(false, "finding the primary", msg)
		return out
	}
	tlsState := "plaintext"
	if u.TLS {
		tlsState = "TLS"
	}
	if ok, why := u.Connect(ctx, addr); !ok {
		add(false, fmt.Sprintf("connecting to %s (%s) as user %s", addr, tlsState, u.User), why)
		return out
	}
	add(true, fmt.Sprintf("connecting to %s (%s) as user %s, PING", addr, tlsState, u.User), "")

	timeout := a.h.Timeout()
	do := func(args ...any) error {
		c, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		return a.h.Side().Do(c, args...).Err()
	}
	if err := do("COMMAND", "COUNT"); err != nil {
		add(!a.h.Decider().Active() && !u.Cluster, "COMMAND (Valkey's command table, needed by lock rules)",
			errText(err)+"; allow the user +command")
	} else {
		add(true, "COMMAND (Valkey's command table)", "")
	}
	loaded := true
	for _, sc := range rewrite.Scripts {
		if err := do("SCRIPT", "LOAD", sc.Body); err != nil {
			add(true, "SCRIPT LOAD (optional)", errText(err)+"; lockproxy sends its scripts by EVAL instead (allow +script|load to save the bytes)")
			loaded = false
			break
		}
	}
	if loaded {
		add(true, "SCRIPT LOAD of lockproxy's scripts", "")
	}
	rules := a.h.Decider().Rules.All()
	if len(rules) == 0 {
		return out
	}
	// Each rule's cycle, through the proxy, as a client would run it.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		add(false, "a loopback listener for the lock cycles", err.Error())
		return out
	}
	go func() { _ = u.Serve(l) }()
	defer l.Close()
	// The client logs in to the proxy as the proxy does to Valkey: with
	// requirepass the proxy asks its clients for a login, as Valkey does.
	o := &redis.Options{Addr: l.Addr().String(), Protocol: 2, MaxRetries: -1, PoolSize: 1,
		DisableIdentity: true, ReadTimeout: timeout + u.ReplyTimeout, DialerRetries: 1}
	if u.Password != "" {
		o.Username, o.Password = u.User, u.Password
	}
	c := redis.NewClient(o)
	defer c.Close()
	for i := range rules {
		r := &rules[i]
		key := r.Pattern.Example()
		if !r.Pattern.Match([]byte(key)) {
			add(true, fmt.Sprintf("rule %q: lock cycle", r.Pattern), "skipped: no example key for this pattern")
			continue
		}
		what := fmt.Sprintf("rule %q: SET NX PX, PEXPIRE, DEL of %q through lockproxy", r.Pattern, key)
		c2, cancel := context.WithTimeout(ctx, 2*(timeout+u.ReplyTimeout))
		err := c.SetNX(c2, key, "lockproxy-check-upstream", 10*time.Second).Err()
		if err == nil {
			err = c.PExpire(c2, key, 10*time.Second).Err()
		}
		if err == nil {
			err = c.Del(c2, key).Err()
		}
		cancel()
		if err != nil {
			add(false, what, errText(err)+"; the ACL of upstream.username needs the lock's keys, lockproxy's keys ({<lock>}:lockproxy:*) and +evalsha +eval +script|load +time (docs/operations.md, ACL recipes)")
			continue
		}
		add(true, what, "")
		// The locks' index: lock commands write it when they may (pcall)
		// and work without it, but LOCKS, STATS and SESSIONS read it.
		idx := string(rewrite.IndexKey([]byte(key), u.Cluster))
		if err := do("ZCARD", idx); err != nil {
			add(false, fmt.Sprintf("rule %q: reading the locks' index %q (LOCKS, STATS, SESSIONS)", r.Pattern, idx),
				errText(err)+"; allow the user the key pattern ~*:lockproxy:index (docs/operations.md, ACL recipes); lock commands work without it")
		}
	}
	return out
}

func errText(err error) string {
	return strings.TrimSpace(err.Error())
}
