package proxy

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/lockproxy/lockproxy/rewrite"
	"github.com/lockproxy/lockproxy/upstream"
	"github.com/redis/go-redis/v9"
)

// Check is one finding of [Proxy.CheckUpstream].
type Check struct {
	OK     bool
	What   string // what was tried
	Detail string // what happened, and on failure what to fix
}

// CheckUpstream connects to Valkey as the configuration says and tries
// what lockproxy will need there: the connection (TLS, login), PING,
// Valkey's command table (COMMAND, needed with lock rules or a cluster),
// loading lockproxy's scripts (SCRIPT LOAD; without it they are sent whole
// by EVAL), and for each lock rule one lock's cycle through this proxy on
// a key the rule matches (SET NX PX, PEXPIRE, DEL; the key is removed,
// and lives 10 s at most), then a read of the locks' index: the ACL
// rights and key patterns the rules need.
// It writes to Valkey only that key and lockproxy's records of it.
func (p *Proxy) CheckUpstream(ctx context.Context) []Check {
	var out []Check
	add := func(ok bool, what, detail string) { out = append(out, Check{ok, what, detail}) }
	addr, err := p.upstreamAddr()
	if err != nil {
		add(false, "finding the primary", err.Error()+"; check upstream.sentinel")
		return out
	}
	tlsState := "plaintext"
	if p.upstreamTLS() != nil {
		tlsState = "TLS"
	}
	user := upstream.UserOrDefault(p.opts.Upstream.Username)
	v := upstream.Classify(addr, p.connector.Check(ctx, addr, p.checkState()))
	if !v.Up() {
		add(false, fmt.Sprintf("connecting to %s (%s) as user %s", addr, tlsState, user), v.String())
		return out
	}
	add(true, fmt.Sprintf("connecting to %s (%s) as user %s, PING", addr, tlsState, user), "")

	do := func(args ...any) error {
		c, cancel := context.WithTimeout(ctx, p.opts.Upstream.DialTimeout.D())
		defer cancel()
		return p.side.Do(c, args...).Err()
	}
	if err := do("COMMAND", "COUNT"); err != nil {
		add(!p.decider.Load().Active() && p.cl == nil, "COMMAND (Valkey's command table, needed by lock rules)",
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
	rules := p.decider.Load().Rules.All()
	if len(rules) == 0 {
		return out
	}
	// Each rule's cycle, through this proxy, as a client would run it.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		add(false, "a loopback listener for the lock cycles", err.Error())
		return out
	}
	go func() { _ = p.Serve(l) }()
	defer l.Close()
	c := redis.NewClient(&redis.Options{Addr: l.Addr().String(), Protocol: 2, MaxRetries: -1, PoolSize: 1,
		DisableIdentity: true, ReadTimeout: p.opts.Upstream.DialTimeout.D() + p.opts.Upstream.ReplyTimeout.D()})
	defer c.Close()
	for i := range rules {
		r := &rules[i]
		key := exampleKey(r.Pattern.String())
		if !r.Pattern.Match([]byte(key)) {
			add(true, fmt.Sprintf("rule %q: lock cycle", r.Pattern), "skipped: no example key for this pattern")
			continue
		}
		what := fmt.Sprintf("rule %q: SET NX PX, PEXPIRE, DEL of %q through lockproxy", r.Pattern, key)
		c2, cancel := context.WithTimeout(ctx, 2*(p.opts.Upstream.DialTimeout.D()+p.opts.Upstream.ReplyTimeout.D()))
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
		idx := string(rewrite.IndexKey([]byte(key), p.cl != nil))
		if err := do("ZCARD", idx); err != nil {
			add(false, fmt.Sprintf("rule %q: reading the locks' index %q (LOCKS, STATS, SESSIONS)", r.Pattern, idx),
				errText(err)+"; allow the user the key pattern ~*:lockproxy:index (docs/operations.md, ACL recipes); lock commands work without it")
		}
	}
	return out
}

// exampleKey is a key the glob pattern matches, for a probe: every * and ?
// becomes text of its own, a class its first character.
func exampleKey(pattern string) string {
	var b strings.Builder
	for i := 0; i < len(pattern); i++ {
		switch c := pattern[i]; c {
		case '*':
			b.WriteString("lockproxy-check-upstream")
		case '?':
			b.WriteByte('x')
		case '\\':
			if i+1 < len(pattern) {
				i++
				b.WriteByte(pattern[i])
			}
		case '[':
			j := i + 1
			if j < len(pattern) && (pattern[j] == '^' || pattern[j] == '!') {
				b.WriteString("lockproxy-check-upstream") // a negated class: let Match decide
				for j < len(pattern) && pattern[j] != ']' {
					j++
				}
				i = j
				continue
			}
			if j < len(pattern) {
				b.WriteByte(pattern[j])
			}
			for j < len(pattern) && pattern[j] != ']' {
				j++
			}
			i = j
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func errText(err error) string {
	return strings.TrimSpace(err.Error())
}
