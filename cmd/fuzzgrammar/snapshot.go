package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// keyState is what is compared of one key: its type, its value in a
// form that does not depend on encoding, and its remaining time to live.
type keyState struct {
	typ, val string
	pttl     int64 // -1 none, -2 gone
}

// snapshot is the world as a direct connection reads it: the watched
// keys of each database ("db/key"), and server-wide state.
type snapshot struct {
	at     time.Time
	keys   map[string]keyState
	global map[string]string
}

// sensitive are the parameters whose change would reopen or break the
// server (passwords, where it listens and writes, what it persists and
// runs, how much it keeps).
var sensitive = []string{"requirepass", "bind", "port", "dir", "dbfilename", "appendonly", "save",
	"maxmemory", "maxmemory-policy", "protected-mode", "enable-debug-command", "enable-module-command",
	"replica-read-only", "notify-keyspace-events", "maxclients", "timeout", "aclfile", "masteruser", "masterauth"}

var ctx = context.Background()

// readKeys reads the watched keys of db: fixed names, and every key that
// matches one of the patterns (SCAN).
func readKeys(c *redis.Client, db int, fixed, patterns []string, into map[string]keyState) error {
	names := map[string]bool{}
	for _, k := range fixed {
		names[k] = true
	}
	for _, p := range patterns {
		it := c.Scan(ctx, 0, p, 1000).Iterator()
		for it.Next(ctx) {
			names[it.Val()] = true
		}
		if err := it.Err(); err != nil {
			return err
		}
	}
	keys := make([]string, 0, len(names))
	for k := range names {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	// Two round trips: every TYPE, then every value and PTTL.
	pipe := c.Pipeline()
	types := make([]*redis.StatusCmd, len(keys))
	for i, k := range keys {
		types[i] = pipe.Type(ctx, k)
	}
	_, _ = pipe.Exec(ctx)
	pipe = c.Pipeline()
	vals := make([]redis.Cmder, len(keys))
	ttls := make([]*redis.DurationCmd, len(keys))
	for i, k := range keys {
		if err := types[i].Err(); err != nil {
			return fmt.Errorf("db %d TYPE %s: %v", db, k, err)
		}
		switch types[i].Val() {
		case "none":
			if contains(fixed, k) {
				into[fmt.Sprintf("%d/%s", db, k)] = keyState{typ: "none", pttl: -2}
			}
			continue
		case "string":
			vals[i] = pipe.Get(ctx, k)
		case "hash":
			vals[i] = pipe.HGetAll(ctx, k)
		case "set":
			vals[i] = pipe.SMembers(ctx, k)
		case "list":
			vals[i] = pipe.LRange(ctx, k, 0, -1)
		case "zset":
			vals[i] = pipe.ZRangeWithScores(ctx, k, 0, -1)
		default:
			vals[i] = pipe.Dump(ctx, k)
		}
		ttls[i] = pipe.PTTL(ctx, k)
	}
	_, _ = pipe.Exec(ctx)
	for i, k := range keys {
		if vals[i] == nil {
			continue
		}
		if err := vals[i].Err(); err != nil && err != redis.Nil {
			return fmt.Errorf("db %d key %s: %v", db, k, err)
		}
		d, err := ttls[i].Result()
		if err != nil {
			return fmt.Errorf("db %d PTTL %s: %v", db, k, err)
		}
		st := keyState{typ: types[i].Val(), val: value(vals[i]), pttl: d.Milliseconds()}
		if d < 0 {
			st.pttl = int64(d) // go-redis gives -1 and -2 as Durations of -1 and -2 ns
		}
		into[fmt.Sprintf("%d/%s", db, k)] = st
	}
	return nil
}

// value is a read value in a form that does not depend on its encoding:
// a hash's fields and a set's members sorted.
func value(c redis.Cmder) string {
	var vals []string
	switch x := c.(type) {
	case *redis.StringCmd:
		if c.Name() == "dump" {
			return fmt.Sprintf("%x", x.Val())
		}
		return x.Val()
	case *redis.MapStringStringCmd:
		for f, v := range x.Val() {
			vals = append(vals, f+"="+v)
		}
		sort.Strings(vals)
	case *redis.StringSliceCmd:
		vals = x.Val()
		if c.Name() == "smembers" {
			sort.Strings(vals)
		}
	case *redis.ZSliceCmd:
		for _, z := range x.Val() {
			vals = append(vals, fmt.Sprintf("%v=%v", z.Member, z.Score))
		}
	}
	return strings.Join(vals, ",")
}

// readGlobal reads the server-wide state a stranger must not change.
func readGlobal(c *redis.Client, into map[string]string) error {
	acl, err := c.Do(ctx, "ACL", "LIST").StringSlice()
	if err != nil {
		return fmt.Errorf("ACL LIST: %v", err)
	}
	into["acl"] = strings.Join(acl, "\n")
	args := []any{"CONFIG", "GET"}
	for _, p := range sensitive {
		args = append(args, p)
	}
	m, err := c.Do(ctx, args...).Result()
	if err != nil {
		return fmt.Errorf("CONFIG GET: %v", err)
	}
	cfg := []string{}
	switch x := m.(type) {
	case map[any]any:
		for k, v := range x {
			cfg = append(cfg, fmt.Sprint(k)+"="+fmt.Sprint(v))
		}
	case []any:
		for i := 0; i+1 < len(x); i += 2 {
			cfg = append(cfg, fmt.Sprint(x[i])+"="+fmt.Sprint(x[i+1]))
		}
	}
	sort.Strings(cfg)
	into["config"] = strings.Join(cfg, " ")
	info, err := c.Info(ctx, "replication").Result()
	if err != nil {
		return fmt.Errorf("INFO replication: %v", err)
	}
	for _, l := range strings.Split(info, "\r\n") {
		if strings.HasPrefix(l, "role:") || strings.HasPrefix(l, "master_host:") || strings.HasPrefix(l, "master_port:") {
			into["replication"] += l + " "
		}
	}
	return nil
}

// unmonitoredLibraries names the function libraries whose code does not
// carry lockproxy's monitor (rewrite/monitor_lib.go's marker).
func unmonitoredLibraries(c *redis.Client) (string, error) {
	libs, err := c.FunctionList(ctx, redis.FunctionListQuery{WithCode: true}).Result()
	if err != nil {
		return "", err
	}
	var bad []string
	for _, l := range libs {
		if !strings.Contains(l.Code, "local __lockproxy_lib = true") {
			bad = append(bad, l.Name)
		}
	}
	sort.Strings(bad)
	return strings.Join(bad, ","), nil
}

// diff lists how now differs from base. allowed keys (a lock whose token
// the line passed) may change; so may lockproxy's own keys then, as a
// token-checked release removes its records. A time to live may only
// run down with the time that passed (with a generous margin).
func diff(base, now *snapshot, allowed map[string]bool) []string {
	var out []string
	elapsed := now.at.Sub(base.at).Milliseconds()
	ownFree := len(allowed) > 0
	names := map[string]bool{}
	for k := range base.keys {
		names[k] = true
	}
	for k := range now.keys {
		names[k] = true
	}
	sorted := make([]string, 0, len(names))
	for k := range names {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	for _, k := range sorted {
		if allowed[k] || ownFree && strings.Contains(k, "lockproxy") {
			continue
		}
		b, okb := base.keys[k]
		n, okn := now.keys[k]
		switch {
		case !okb:
			out = append(out, fmt.Sprintf("%s appeared (%s %q)", k, n.typ, cut(n.val)))
		case !okn || n.typ == "none" && b.typ != "none":
			out = append(out, fmt.Sprintf("%s is gone (was %s %q)", k, b.typ, cut(b.val)))
		case b.typ != n.typ || b.val != n.val:
			out = append(out, fmt.Sprintf("%s changed: %s %q -> %s %q", k, b.typ, cut(b.val), n.typ, cut(n.val)))
		case (b.pttl < 0) != (n.pttl < 0):
			out = append(out, fmt.Sprintf("%s TTL changed: %d ms -> %d ms", k, b.pttl, n.pttl))
		case b.pttl >= 0 && (n.pttl > b.pttl+2000 || n.pttl < b.pttl-elapsed-10000):
			out = append(out, fmt.Sprintf("%s TTL changed: %d ms -> %d ms in %d ms", k, b.pttl, n.pttl, elapsed))
		}
	}
	gk := make([]string, 0, len(base.global))
	for k := range base.global {
		gk = append(gk, k)
	}
	sort.Strings(gk)
	for _, k := range gk {
		if v := base.global[k]; now.global[k] != v {
			out = append(out, fmt.Sprintf("%s changed: %s", k, parts(v, now.global[k])))
		}
	}
	for k, v := range now.global {
		if _, ok := base.global[k]; !ok && v != "" {
			out = append(out, fmt.Sprintf("%s: %q", k, cut(v)))
		}
	}
	return out
}

// parts says what differs between two lists (topology lines, ACL rules,
// configuration pairs): what went, what came.
func parts(a, b string) string {
	split := func(s string) []string {
		return strings.FieldsFunc(s, func(r rune) bool { return r == ';' || r == '\n' || r == ' ' })
	}
	in := func(list []string) map[string]int {
		m := map[string]int{}
		for _, x := range list {
			m[x]++
		}
		return m
	}
	pa, pb := split(a), split(b)
	ma, mb := in(pa), in(pb)
	var gone, came []string
	for _, x := range pa {
		if mb[x] == 0 {
			gone = append(gone, x)
		}
	}
	for _, x := range pb {
		if ma[x] == 0 {
			came = append(came, x)
		}
	}
	if len(gone) == 0 && len(came) == 0 {
		return fmt.Sprintf("%q -> %q", cut(a), cut(b))
	}
	return fmt.Sprintf("-%q +%q", cut(strings.Join(gone, " ")), cut(strings.Join(came, " ")))
}

func cut(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
