package admin

import (
	"context"
	"errors"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/lockproxy/lockproxy/resp"
	"github.com/lockproxy/lockproxy/rewrite"
	"github.com/redis/go-redis/v9"
)

// The locks' index (rewrite/index.go) as the admin commands read it: the
// records keys there are, listed by lockproxy's scripts, so that LOCKS,
// STATS and SESSIONS read what the index lists and never walk the
// keyspace, except once per server and database for the records written
// before the index existed (indexOnce), or when an operator asks
// (LOCKPROXY REINDEX).

const (
	indexPage  = 1000 // members per ZRANGE
	indexBatch = 256  // locks read, or members taken out, per pipeline
	// indexPages is how many indexes' pages a pipeline reads: in a
	// cluster a primary's slots' indexes are mostly absent, each ZRANGE a
	// few bytes each way.
	indexPages = 2048
)

// indexOnce makes sure the records written before the index existed are
// in it: unless the server's first index holds rewrite.IndexedMember (or
// force), it finds every records key with SCAN and lists each in its
// index, then adds the member. found counts the records keys SCAN
// returned, added those that were not listed yet. c has database db
// selected.
//
// The SCAN stops after half the time ctx leaves, with errIndexing: the
// cursor is kept (Admin.indexScans), and the next call (forced or not)
// goes on from there, so a keyspace too big for one command's deadline is
// indexed over a few.
func (a *Admin) indexOnce(ctx context.Context, c *redis.Conn, s server, db int, force bool) (found, added int64, err error) {
	if !force {
		err := c.ZScore(ctx, s.indexes[0], rewrite.IndexedMember).Err()
		if err == nil || moving(err) {
			return 0, 0, nil // marked; or moving, and a read with the new map checks again
		}
		if err != redis.Nil {
			return 0, 0, err
		}
	}
	at := s.c.Options().Addr + "/" + strconv.Itoa(db)
	var cursor uint64
	if v, ok := a.indexScans.Load(at); ok {
		cursor = v.(uint64)
	}
	stop := time.Now().Add(time.Hour)
	if d, ok := ctx.Deadline(); ok {
		stop = time.Now().Add(time.Until(d) / 2)
	}
	for {
		keys, next, err := c.Scan(ctx, cursor, "*"+rewrite.RecordsSuffix, 1000).Result()
		if err != nil {
			return found, added, err
		}
		if len(keys) > 0 {
			// Score 0: the next acquisition in the slot looks at it
			// (fnIndex).
			pipe := c.Pipeline()
			cmds := make([]*redis.IntCmd, len(keys))
			for i, rk := range keys {
				cmds[i] = pipe.ZAddNX(ctx, string(rewrite.RecordsIndexKey([]byte(rk), s.cluster)), redis.Z{Member: rk})
			}
			if _, err := pipe.Exec(ctx); err != nil {
				return found, added, err
			}
			found += int64(len(keys))
			for _, cmd := range cmds {
				added += cmd.Val()
			}
		}
		cursor = next
		if cursor == 0 {
			break
		}
		if time.Now().After(stop) {
			a.indexScans.Store(at, cursor)
			return found, added, errIndexing
		}
	}
	a.indexScans.Delete(at)
	err = c.ZAdd(ctx, s.indexes[0], redis.Z{Score: math.Inf(1), Member: rewrite.IndexedMember}).Err()
	return found, added, err
}

// moving reports whether a reply is a cluster's redirect: while a slot
// moves (or after it moved, before the proxy read the new map) its index
// and records may be on another node, and are left out of this read.
func moving(err error) bool {
	m := err.Error()
	return strings.HasPrefix(m, "MOVED ") || strings.HasPrefix(m, "ASK ") || strings.HasPrefix(m, "TRYAGAIN")
}

// errIndexing: indexOnce's SCAN stopped before the end of the keyspace.
var errIndexing = errors.New("indexing")

// indexMembers reads the records keys the indexes list, a page of each at a
// time; a member listed twice (the index changed between two pages) is
// returned once.
func indexMembers(ctx context.Context, c *redis.Conn, indexes []string) ([]string, error) {
	type page struct {
		key   string
		start int64
	}
	todo := make([]page, len(indexes))
	for i, k := range indexes {
		todo[i] = page{k, 0}
	}
	var out []string
	seen := map[string]bool{}
	for len(todo) > 0 {
		batch := todo[:min(len(todo), indexPages)]
		pipe := c.Pipeline()
		cmds := make([]*redis.StringSliceCmd, len(batch))
		for i, pg := range batch {
			cmds[i] = pipe.ZRange(ctx, pg.key, pg.start, pg.start+indexPage-1)
		}
		_, _ = pipe.Exec(ctx) // each reply is checked below
		var more []page
		for i, cmd := range cmds {
			if err := cmd.Err(); err != nil {
				if moving(err) {
					continue
				}
				return nil, err
			}
			ms := cmd.Val()
			for _, m := range ms {
				if strings.HasSuffix(m, rewrite.RecordsSuffix) && !seen[m] {
					seen[m] = true
					out = append(out, m)
				}
			}
			if len(ms) == indexPage {
				more = append(more, page{batch[i].key, batch[i].start + indexPage})
			}
		}
		todo = append(more, todo[len(batch):]...)
	}
	return out, nil
}

// unindex takes out of their indexes the records keys found gone, each
// only if still gone (rewrite.Unindex): a lock granted again meanwhile
// stays listed.
func unindex(ctx context.Context, c *redis.Conn, s server, gone []string) error {
	for len(gone) > 0 {
		batch := gone[:min(len(gone), indexBatch)]
		gone = gone[len(batch):]
		pipe := c.Pipeline()
		cmds := make([]*redis.Cmd, len(batch))
		for i, rk := range batch {
			cmds[i] = pipe.Eval(ctx, rewrite.Unindex.Body, []string{string(rewrite.RecordsIndexKey([]byte(rk), s.cluster)), rk})
		}
		_, _ = pipe.Exec(ctx)
		for _, cmd := range cmds {
			if err := cmd.Err(); err != nil && !moving(err) {
				return err
			}
		}
	}
	return nil
}

// REINDEX: every server's records keys are found with SCAN and listed in
// the index, for records an older lockproxy wrote after the first LOCKS,
// STATS or SESSIONS had indexed a server (a rolling upgrade).
func (a *Admin) reindex(conn Conn, _ [][]byte) []byte {
	db := conn.DB()
	ctx, cancel := context.WithTimeout(context.Background(), 4*a.h.Timeout())
	defer cancel()
	servers, done := a.servers()
	defer done()
	var found, added int64
	for _, sv := range servers {
		f, a, err := func() (int64, int64, error) {
			c := sv.c.Conn()
			defer c.Close()
			if err := c.Select(ctx, db).Err(); err != nil {
				return 0, 0, err
			}
			return a.indexOnce(ctx, c, sv, db, true)
		}()
		found, added = found+f, added+a
		if err != nil {
			return resp.AppendError(nil, errUpstream(err))
		}
	}
	return Encode(nil, []Field{
		{"servers", int64(len(servers))},
		{"records_found", found},
		{"added", added},
	}, conn.Proto())
}
