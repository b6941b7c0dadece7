package proxy

import (
	"context"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/lockproxy/lockproxy/policy"
	"github.com/lockproxy/lockproxy/resp"
	"github.com/redis/go-redis/v9"
)

const timeFormat = "2006-01-02T15:04:05.000Z07:00"

func fmtTime(t time.Time) string { return t.UTC().Format(timeFormat) }

func ms(d time.Duration) int64 { return d.Milliseconds() }

// AUDIT [COUNT n] [KEY pattern] [OUTCOME name]
func (s *session) adminAudit(args [][]byte) []byte {
	n := 10
	var key *policy.Pattern
	var outcome Outcome
	for i := 0; i < len(args); i += 2 {
		if i+1 >= len(args) {
			return resp.AppendError(nil, "ERR syntax error: "+strings.ToUpper(string(args[i]))+" needs a value; LOCKPROXY AUDIT [COUNT <n>] [KEY <pattern>] [OUTCOME <name>]")
		}
		v := args[i+1]
		switch strings.ToUpper(string(args[i])) {
		case "COUNT":
			c, err := strconv.Atoi(string(v))
			if err != nil || c <= 0 {
				return resp.AppendError(nil, "ERR COUNT must be a positive integer")
			}
			n = c
		case "KEY":
			key = policy.CompileAny(string(v))
		case "OUTCOME":
			outcome = Outcome(strings.ToLower(string(v)))
			if outcomeIndex(outcome) < 0 {
				return resp.AppendError(nil, "ERR unknown OUTCOME '"+string(v)+"'; outcomes are: "+outcomeList())
			}
		default:
			return resp.AppendError(nil, "ERR syntax error: unknown option '"+string(args[i])+"'; LOCKPROXY AUDIT [COUNT <n>] [KEY <pattern>] [OUTCOME <name>]")
		}
	}
	evs := s.p.events.recent(n, func(e *Event) bool {
		return (key == nil || key.Match([]byte(e.Key))) && (outcome == "" || e.Outcome == outcome)
	})
	list := make([][]field, len(evs))
	for i, e := range evs {
		list[i] = eventFields(&e)
	}
	return encodeValue(nil, list, s.proto)
}

func eventFields(e *Event) []field {
	return []field{
		{"time", fmtTime(e.Time)},
		{"outcome", string(e.Outcome)},
		{"command", e.Command},
		{"key", e.Key},
		{"rule", e.Rule},
		{"client", e.Client},
		{"client_name", e.Name},
		{"owner", e.Owner},
		{"holder", e.Holder},
		{"token", e.Token},
		{"grant", e.Grant},
		{"detail", e.Detail},
	}
}

// grantView is one grant record, copied out of the table.
type grantView struct {
	key string
	g   grant
}

// liveGrants returns the grants whose lease is running (or that have none),
// of keys matching pat (nil: all), by key then grant number.
func (p *Proxy) liveGrants(pat *policy.Pattern, now time.Time) []grantView {
	gs := p.grants
	gs.mu.Lock()
	var out []grantView
	for k, m := range gs.byKey {
		if pat != nil && !pat.Match([]byte(k)) {
			continue
		}
		for _, g := range m {
			if g.live(now) {
				out = append(out, grantView{k, *g})
			}
		}
	}
	gs.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if out[i].key != out[j].key {
			return out[i].key < out[j].key
		}
		return out[i].g.number < out[j].g.number
	})
	return out
}

// liveCount is the number of grants whose lease is running.
func (p *Proxy) liveCount(now time.Time) int64 {
	gs := p.grants
	gs.mu.Lock()
	defer gs.mu.Unlock()
	var n int64
	for _, m := range gs.byKey {
		for _, g := range m {
			if g.live(now) {
				n++
			}
		}
	}
	return n
}

// ownerGrants returns the live grants of the given owners.
func (p *Proxy) ownerGrants(owners []string, now time.Time) []grantView {
	gs := p.grants
	gs.mu.Lock()
	defer gs.mu.Unlock()
	var out []grantView
	for _, o := range owners {
		for k := range gs.byOwner[o] {
			if g, _ := gs.byKey[k].of(o); g != nil && g.live(now) {
				out = append(out, grantView{k, *g})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key < out[j].key })
	return out
}

// LOCKS [pattern]
func (s *session) adminLocks(args [][]byte) []byte {
	var pat *policy.Pattern
	if len(args) == 1 {
		pat = policy.CompileAny(string(args[0]))
	}
	p := s.p
	now := time.Now()
	locks := p.liveGrants(pat, now)
	// What Valkey holds now, in one round trip: the remaining lease, and
	// whether the key still holds this grant's value (compared here; values
	// are never shown).
	ttls := make([]*redis.DurationCmd, len(locks))
	vals := make([]*redis.StringCmd, len(locks))
	if len(locks) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), p.opts.DialTimeout)
		pipe := p.side.Pipeline()
		pipe.Select(ctx, s.db) // every time: the side connection keeps the last one
		for i, l := range locks {
			ttls[i] = pipe.PTTL(ctx, l.key)
			vals[i] = pipe.Get(ctx, l.key)
		}
		_, _ = pipe.Exec(ctx)
		cancel()
	}
	list := make([][]field, len(locks))
	for i, l := range locks {
		g := &l.g
		var ttl, current any = nil, "unknown"
		if d, err := ttls[i].Result(); err == nil {
			switch {
			case d == -2: // go-redis passes PTTL's -2 and -1 through unscaled
				ttl = int64(-2)
			case d < 0:
				ttl = int64(-1)
			default:
				ttl = ms(d)
			}
		}
		if v, err := vals[i].Result(); err == nil {
			current = yesNo(v == string(g.value))
		} else if err == redis.Nil {
			current = "no"
		}
		var lease any = nil
		if g.lease > 0 {
			lease = ms(g.lease)
		} else if !g.expires.IsZero() {
			lease = ms(g.expires.Sub(g.acquired))
		}
		rule := ""
		if g.rule != nil {
			rule = g.rule.Pattern.String()
		}
		list[i] = []field{
			{"key", l.key},
			{"rule", rule},
			{"holder", g.client},
			{"client_name", g.name},
			{"owner", g.owner},
			{"grant", g.number},
			{"acquired", fmtTime(g.acquired)},
			{"held_ms", ms(now.Sub(g.acquired))},
			{"lease_ms", lease},
			{"ttl_ms", ttl},
			{"current", current},
			{"token", mask(g.value)},
		}
	}
	return encodeValue(nil, list, s.proto)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// SESSIONS
func (s *session) adminSessions([][]byte) []byte {
	p := s.p
	p.mu.Lock()
	list := make([]*session, 0, len(p.sessions))
	for x := range p.sessions {
		list = append(list, x)
	}
	p.mu.Unlock()
	sort.Slice(list, func(i, j int) bool { return list[i].id < list[j].id })
	now := time.Now()
	out := make([][]field, len(list))
	for i, x := range list {
		name := x.nameSnapshot()
		owners := []string{x.connOwner, "addr:" + x.host}
		if name != "" {
			owners = append(owners, "name:"+name)
		}
		var locks []string
		for _, g := range p.ownerGrants(owners, now) {
			locks = append(locks, g.key+" grant "+strconv.FormatInt(g.g.number, 10)+" owner "+g.g.owner)
		}
		if locks == nil {
			locks = []string{}
		}
		var age int64
		if cc, ok := x.nc.(*countConn); ok {
			age = int64(now.Sub(cc.since).Seconds())
		}
		_, admin := p.ops.authed.Load(x)
		out[i] = []field{
			{"id", int64(x.id)},
			{"addr", x.addr},
			{"name", name},
			{"age_s", age},
			{"owners", owners},
			{"locks", locks},
			{"admin", yesNo(admin)},
			{"self", yesNo(x == s)},
		}
	}
	return encodeValue(nil, out, s.proto)
}

// FENCE <lock-key>: the calling connection's grant number for the lock, under
// the owner scope of the lock's rule; nil when it holds no grant of it.
func (s *session) adminFence(args [][]byte) []byte {
	key := args[0]
	r := s.p.decider.Load().Rules.Match(key)
	if r == nil {
		return resp.AppendNull(nil, s.proto)
	}
	if _, n, ok := s.Grant(key, s.Owner(r)); ok {
		return resp.AppendInt(nil, n)
	}
	return resp.AppendNull(nil, s.proto)
}
