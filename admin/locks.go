package admin

import (
	"context"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/lockproxy/lockproxy/policy"
	"github.com/lockproxy/lockproxy/resp"
	"github.com/lockproxy/lockproxy/rewrite"
	"github.com/lockproxy/lockproxy/telemetry"
	"github.com/redis/go-redis/v9"
)

// lockView is one owner record of a lock, as Valkey holds it.
type lockView struct {
	key      string
	rule     *policy.Rule
	owner    string
	grant    int64
	acquired time.Time
	leaseEnd time.Time // zero: the lock has no expiry
	ttl      int64     // the lock's PTTL now (-2 gone, -1 no expiry)
	current  bool      // the key holds this record's value and the counter its grant
	value    string
}

// readLocks reads every owner record of the locks of database db whose key
// matches pat (nil: all) from Valkey, with the lock's state now: the
// records of every lockproxy instance in front of it. Only records whose
// lease is running (or that have none) are kept, by key then grant.
//
// It reads the locks' index (index.go; the scripts that keep it are
// rewrite/index.go's), not the keyspace: its cost grows with the locks
// recorded, not with the keys there are.
func (a *Admin) readLocks(db int, pat *policy.Pattern) ([]lockView, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*a.h.Timeout())
	defer cancel()
	servers, done := a.servers() // in a cluster, every primary: a lock's keys are on its slot's
	defer done()
	var out []lockView
	for _, sv := range servers {
		var err error
		if out, err = a.readLocksFrom(ctx, sv, db, pat, out); err != nil {
			return nil, err
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].key != out[j].key {
			return out[i].key < out[j].key
		}
		return out[i].grant < out[j].grant
	})
	return out, nil
}

// readLocksFrom appends to out the records readLocks keeps from one server:
// those of the records keys its indexes list, read indexBatch locks to a
// round trip. A member whose records are gone leaves the index.
func (a *Admin) readLocksFrom(ctx context.Context, sv server, db int, pat *policy.Pattern, out []lockView) ([]lockView, error) {
	c := sv.c.Conn()
	defer c.Close()
	if err := c.Select(ctx, db).Err(); err != nil {
		return nil, err
	}
	if _, _, err := a.indexOnce(ctx, c, sv, db, false); err != nil {
		return nil, indexError{sv.indexes[0], err}
	}
	members, err := indexMembers(ctx, c, sv.indexes)
	if err != nil {
		return nil, indexError{sv.indexes[0], err}
	}
	type lockRead struct {
		rk, lock string
		r        *policy.Rule
		recs     *redis.MapStringStringCmd
		val, cnt *redis.StringCmd
		ttl      *redis.DurationCmd
	}
	rules := a.h.Decider().Rules
	now := time.Now()
	var gone []string
	for len(members) > 0 {
		batch := members[:min(len(members), indexBatch)]
		members = members[len(batch):]
		reads := make([]lockRead, 0, len(batch))
		pipe := c.Pipeline()
		for _, rk := range batch {
			lock, r := lockOfRecords(rules, rk)
			if r == nil || (pat != nil && !pat.Match([]byte(lock))) {
				continue
			}
			counter := string(rewrite.CounterKey([]byte(lock)))
			if r.Fencing != nil {
				counter = string(r.Fencing.CounterKey(r, []byte(lock)))
			}
			reads = append(reads, lockRead{rk: rk, lock: lock, r: r,
				recs: pipe.HGetAll(ctx, rk), val: pipe.Get(ctx, lock), cnt: pipe.Get(ctx, counter), ttl: pipe.PTTL(ctx, lock)})
		}
		if len(reads) == 0 {
			continue
		}
		_, _ = pipe.Exec(ctx) // a missing or other-typed key is an answer too; the records' read says if Valkey answered
		for _, rd := range reads {
			recs, err := rd.recs.Result()
			if err != nil {
				if moving(err) {
					continue
				}
				return nil, err
			}
			if len(recs) == 0 {
				gone = append(gone, rd.rk)
				continue
			}
			v, vErr := rd.val.Result()
			g, _ := rd.cnt.Result()
			t := int64(-2)
			if d, err := rd.ttl.Result(); err == nil {
				t = int64(d)
				if d > 0 {
					t = d.Milliseconds()
				}
			}
			for owner, rec := range recs {
				lv, ok := parseRecord(rec)
				if !ok || (!lv.leaseEnd.IsZero() && !lv.leaseEnd.After(now)) {
					continue
				}
				lv.key, lv.rule, lv.owner, lv.ttl = rd.lock, rd.r, owner, t
				lv.current = vErr == nil && v == lv.value && g == strconv.FormatInt(lv.grant, 10)
				out = append(out, lv)
			}
		}
	}
	if err := unindex(ctx, c, sv, gone); err != nil {
		return nil, indexError{sv.indexes[0], err}
	}
	return out, nil
}

// lockOfRecords finds the lock a records key belongs to: its name without
// the suffix, or without the braces RecordsKey wrapped it in, or without the
// '}' it added after a key that ends in one; the one a rule matches and
// whose records key it is.
func lockOfRecords(rules *policy.Rules, rk string) (string, *policy.Rule) {
	x := strings.TrimSuffix(rk, rewrite.RecordsSuffix)
	cands := []string{x}
	if len(x) > 2 && x[0] == '{' && x[len(x)-1] == '}' {
		cands = append(cands, x[1:len(x)-1])
	}
	if strings.HasSuffix(x, "}}") {
		cands = append(cands, x[:len(x)-1])
	}
	for _, c := range cands {
		if r := rules.Match([]byte(c)); r != nil && string(rewrite.RecordsKey([]byte(c))) == rk {
			return c, r
		}
	}
	return "", nil
}

// parseRecord reads "<grant> <acquired ms> <lease end ms> <value>".
func parseRecord(rec string) (lockView, bool) {
	f := strings.SplitN(rec, " ", 4)
	if len(f) != 4 {
		return lockView{}, false
	}
	g, err1 := strconv.ParseInt(f[0], 10, 64)
	a, err2 := strconv.ParseInt(f[1], 10, 64)
	e, err3 := strconv.ParseInt(f[2], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return lockView{}, false
	}
	lv := lockView{grant: g, acquired: time.UnixMilli(a), value: f[3]}
	if e > 0 {
		lv.leaseEnd = time.UnixMilli(e)
	}
	return lv, true
}

// LOCKS [pattern]
func (a *Admin) locks(c Conn, args [][]byte) []byte {
	var pat *policy.Pattern
	if len(args) == 1 {
		pat = policy.CompileAny(string(args[0]))
	}
	locks, err := a.readLocks(c.DB(), pat)
	if err != nil {
		return resp.AppendError(nil, errUpstream(err))
	}
	clients := ownerClients(a.h.Sessions())
	now := time.Now()
	list := make([][]Field, len(locks))
	for i := range locks {
		l := &locks[i]
		var lease, ttl any
		if !l.leaseEnd.IsZero() {
			lease = ms(l.leaseEnd.Sub(l.acquired))
		}
		ttl = l.ttl
		addr, name := ownerClient(clients, l.owner)
		list[i] = []Field{
			{"key", l.key},
			{"rule", l.rule.Pattern.String()},
			{"holder", addr},
			{"client_name", name},
			{"owner", l.owner},
			{"grant", l.grant},
			{"acquired", fmtTime(l.acquired)},
			{"held_ms", ms(now.Sub(l.acquired))},
			{"lease_ms", lease},
			{"ttl_ms", ttl},
			{"current", yesNo(l.current)},
			{"token", telemetry.Mask([]byte(l.value))},
		}
	}
	return EncodeValue(nil, list, c.Proto())
}

// ownerClients maps each connection's owner identity (session:
// connection) to the connection.
func ownerClients(list []Session) map[string]*Session {
	m := make(map[string]*Session, len(list))
	for i := range list {
		m[list[i].Owner] = &list[i]
	}
	return m
}

// ownerClient says what an owner identity tells of its client: the host
// under client_addr, the name under client_name, and for a connection of
// this instance its address and name ("" where unknown: a connection of
// another instance, or one that has closed).
func ownerClient(clients map[string]*Session, owner string) (addr, name string) {
	switch {
	case strings.HasPrefix(owner, "addr:"):
		return owner[len("addr:"):], ""
	case strings.HasPrefix(owner, "name:"):
		return "", owner[len("name:"):]
	}
	if x := clients[owner]; x != nil {
		return x.Addr, x.Name
	}
	return "", ""
}

// SESSIONS
func (a *Admin) sessions(c Conn, _ [][]byte) []byte {
	list := a.h.Sessions()
	// The locks are Valkey's records (of the caller's database), read once
	// for all sessions.
	held, err := a.readLocks(c.DB(), nil)
	if err != nil {
		return resp.AppendError(nil, errUpstream(err))
	}
	now := time.Now()
	out := make([][]Field, len(list))
	for i, x := range list {
		owners := []string{x.Owner, "addr:" + x.Host}
		if x.Name != "" {
			owners = append(owners, "name:"+x.Name)
		}
		if x.UserOwner != "" {
			owners = append(owners, x.UserOwner)
		}
		locks := []string{}
		for _, l := range held {
			if slices.Contains(owners, l.owner) {
				locks = append(locks, l.key+" grant "+strconv.FormatInt(l.grant, 10)+" owner "+l.owner)
			}
		}
		var age int64
		if !x.Since.IsZero() {
			age = int64(now.Sub(x.Since).Seconds())
		}
		out[i] = []Field{
			{"id", int64(x.ID)},
			{"addr", x.Addr},
			{"name", x.Name},
			{"age_s", age},
			{"owners", owners},
			{"locks", locks},
			{"admin", yesNo(a.loggedIn(x.ID))},
			{"self", yesNo(x.ID == c.ID())},
		}
	}
	return EncodeValue(nil, out, c.Proto())
}

// FENCE <lock-key>: the calling connection's grant number for the lock, under
// the owner scope of the lock's rule, from its owner record in Valkey (so a
// grant taken through another instance counts); nil when it holds no grant
// of it.
func (a *Admin) fence(c Conn, args [][]byte) []byte {
	key := args[0]
	r := a.h.Decider().Rules.Match(key)
	if r == nil {
		return resp.AppendNull(nil, c.Proto())
	}
	ctx, cancel := context.WithTimeout(context.Background(), a.h.Timeout())
	defer cancel()
	kc, done := a.h.KeyClient(key)
	defer done()
	conn := kc.Conn()
	defer conn.Close()
	if err := conn.Select(ctx, c.DB()).Err(); err != nil {
		return resp.AppendError(nil, errUpstream(err))
	}
	rec, err := conn.HGet(ctx, string(rewrite.RecordsKey(key)), c.Owner(r)).Result()
	if err == redis.Nil {
		c.FoundMissing(string(key))
		return resp.AppendNull(nil, c.Proto())
	}
	if err != nil {
		return resp.AppendError(nil, errUpstream(err))
	}
	lv, ok := parseRecord(rec)
	if !ok {
		return resp.AppendNull(nil, c.Proto())
	}
	return resp.AppendInt(nil, lv.grant)
}
