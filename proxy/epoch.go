package proxy

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"

	"github.com/lockproxy/lockproxy/rewrite"
	"github.com/lockproxy/lockproxy/upstream"
)

// The epoch a primary mints tokens under (docs/failover.md) is established
// lazily, by the first grant in a database since the primary changed
// (rewrite's fnGrant): lockproxy writes nothing in the keyspace, and makes
// no call that fails, before a lock is granted. What the grant needs to
// know is learned here, with read-only commands, and from the tokens
// handed out: the run id of the Valkey process the connections reach (a
// new one shows a failover or a restart), and the epoch a new
// establishment must exceed (rewrite.EpochClue). What this instance saw is
// kept here, so that a primary that lost its data (restarted without
// persistence) cannot make it forget.
type epochMemory struct {
	mu sync.Mutex
	// run: the run id the connections reached last ("" before any);
	// cur: the highest epoch seen in a token minted on it; prev: the
	// highest epoch a new establishment must exceed (seen on other runs,
	// or in the databases of a flush; -1: none).
	run  string
	cur  int64
	prev int64
	// sentinelFor, sentinelEpoch: the config-epoch Sentinel reported for
	// the primary at sentinelFor (asked again when the primary moves).
	sentinelFor   string
	sentinelEpoch int64
	// nodeRuns: in front of a cluster, the run id last seen at each
	// node's address (cluster_epoch.go).
	nodeRuns map[string]string
}

// epochPerFailover is the room a Sentinel failover epoch leaves for
// restarts without persistence between two failovers: the epoch lockproxy
// mints under is at least config-epoch × epochPerFailover.
const epochPerFailover = 256

// learnEpoch reads, on a new connection (before it is handed out, its
// handshake done), the run id of the Valkey process and the epoch hashes
// of the databases that hold keys (INFO server keyspace, then SELECT and
// HGET of each, and SELECT back to the connection's database: read-only,
// none fails), and passes the epoch clues on to the grants. In a cluster
// it reads the node's run id (learnNodeRun); without lock rules it does
// nothing: see docs/failover.md.
func (p *Proxy) learnEpoch(nc net.Conn, db int) error {
	if !p.decider.Load().Active() {
		// Without lock rules nothing mints a token; a reload that
		// switches rules on reopens the shared connections (reload.go).
		return nil
	}
	if p.cl != nil {
		return p.learnNodeRun(nc)
	}
	floor := p.sentinelEpoch() * epochPerFailover
	p.own.Add(nc, 1) // kept out of MONITOR, as the handshake is (clients.OwnLines)
	replies, err := upstream.RoundTrip(nc, [][]string{{"INFO", "server", "keyspace"}})
	if err != nil {
		return err
	}
	run, dbs, err := parseServerInfo(replies[0])
	if re, ok := err.(*upstream.ReplyError); ok {
		// A login that may not run INFO: its connection's grants mint
		// under the clues other connections learned, or under whatever
		// the hash says (docs/failover.md, Limits).
		p.log.Warn("cannot learn the primary's run id on this login's connection", "error", re.Msg)
		return nil
	}
	if err != nil {
		// Not Valkey's answer (a server that is not Valkey): there is no
		// epoch to mint under.
		p.log.Warn("the upstream did not answer INFO as Valkey does", "error", err)
		return nil
	}
	// The epochs the hashes hold, under this run id and under others.
	same, other := int64(-1), int64(-1)
	if len(dbs) > 0 {
		cmds := make([][]string, 0, 2*len(dbs)+1)
		for _, d := range dbs {
			cmds = append(cmds, []string{"SELECT", d}, []string{"HMGET", rewrite.EpochKey, "epoch", "run"})
		}
		cmds = append(cmds, []string{"SELECT", strconv.Itoa(db)})
		p.own.Add(nc, len(cmds))
		replies, err := upstream.RoundTrip(nc, cmds)
		if err != nil {
			return err
		}
		for i := 1; i < len(replies); i += 2 {
			e, r, ok := parseEpochHash(replies[i])
			switch {
			case !ok:
			case r == run:
				same = max(same, e)
			default:
				other = max(other, e)
			}
		}
	}
	p.epochs.mu.Lock()
	changed := run != p.epochs.run
	if changed && p.epochs.run != "" {
		// A new process: every epoch used on the old one is to exceed.
		p.epochs.prev = max(p.epochs.prev, p.epochs.cur)
		p.epochs.cur = 0
	}
	p.epochs.run = run
	p.epochs.cur = max(p.epochs.cur, same)
	p.epochs.prev = max(p.epochs.prev, other)
	known := p.epochs.prev
	if floor > 0 {
		known = max(known, floor-1)
	}
	p.epochClue.Set(run, known)
	p.epochs.mu.Unlock()
	if changed {
		p.log.Info("the primary's run id", "run_id", run, "epoch_above", known)
	}
	return nil
}

// parseServerInfo reads the run_id and the databases that hold keys from
// INFO server keyspace's reply (a bulk string in RESP2, a verbatim string
// in RESP3), or its error.
func parseServerInfo(b []byte) (string, []string, error) {
	if len(b) > 0 && b[0] == '-' {
		return "", nil, &upstream.ReplyError{Msg: strings.TrimRight(string(b[1:]), "\r\n")}
	}
	var run string
	var dbs []string
	for _, l := range strings.Split(string(b), "\r\n") {
		if v, ok := strings.CutPrefix(l, "run_id:"); ok {
			run = v
		} else if d, _, ok := strings.Cut(l, ":keys="); ok && strings.HasPrefix(d, "db") {
			if _, err := strconv.Atoi(d[2:]); err == nil {
				dbs = append(dbs, d[2:])
			}
		}
	}
	if run == "" || strings.Trim(run, "0123456789abcdef") != "" {
		return "", nil, fmt.Errorf("learning the run id: no hexadecimal run_id in %.60q", b)
	}
	return run, dbs, nil
}

// parseEpochHash reads HMGET lockproxy:epoch epoch run's reply: the epoch
// and its run id, ok false when the database holds no hash (or the reply
// is not an HMGET's).
func parseEpochHash(b []byte) (int64, string, bool) {
	f := strings.Split(string(b), "\r\n")
	if len(f) != 6 || f[0] != "*2" || !strings.HasPrefix(f[1], "$") || !strings.HasPrefix(f[3], "$") {
		return 0, "", false
	}
	e, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil {
		return 0, "", false
	}
	return e, f[4], true
}

// sawToken follows a token this instance handed out: its epoch is in use
// on the current run.
func (p *Proxy) sawToken(grant int64) {
	p.epochs.mu.Lock()
	p.epochs.cur = max(p.epochs.cur, grant>>rewrite.EpochShift)
	p.epochs.mu.Unlock()
}

// sawFlush follows a flush that went through: a database it emptied may
// have had grants under the current epoch without the hash (epoch 0, which
// writes none), so the next establishment there must exceed it; the
// databases that had the hash got it back one higher (rewrite.Flush), and
// stand.
func (p *Proxy) sawFlush() {
	p.epochs.mu.Lock()
	defer p.epochs.mu.Unlock()
	if p.epochs.cur <= p.epochs.prev {
		return
	}
	p.epochs.prev = p.epochs.cur
	if p.epochs.run != "" {
		p.epochClue.Set(p.epochs.run, max(p.epochs.prev, p.sentinelFloorLocked()-1))
	}
}

// sentinelFloorLocked is Sentinel's floor as last asked (p.epochs.mu held).
func (p *Proxy) sentinelFloorLocked() int64 { return p.epochs.sentinelEpoch * epochPerFailover }

// sentinelEpoch is the primary's failover epoch as the Sentinels report
// it (SENTINEL MASTER's config-epoch, the highest of those that answer
// within the dial timeout), 0 without Sentinel or when none answers. It is
// asked once per primary address: a failover moves the primary (and raises
// the epoch), so a new address asks again.
func (p *Proxy) sentinelEpoch() int64 {
	s := p.opts.Upstream.Sentinel
	if s.Master == "" {
		return 0
	}
	addr := p.sentinel.Known()
	p.epochs.mu.Lock()
	if addr != "" && addr == p.epochs.sentinelFor {
		e := p.epochs.sentinelEpoch
		p.epochs.mu.Unlock()
		return e
	}
	p.epochs.mu.Unlock()
	best, answered := p.sentinel.ConfigEpoch()
	if answered && addr != "" {
		p.epochs.mu.Lock()
		p.epochs.sentinelFor, p.epochs.sentinelEpoch = addr, best
		p.epochs.mu.Unlock()
	}
	return best
}

var errRulesOn = errors.New("lock rules were switched on: the connection is reopened to learn the primary's run id")

// reopenShared fails every shared upstream connection (sessions' own keep
// theirs: a transaction or a subscription would be lost).
func (p *Proxy) reopenShared(err error) { p.reopen(err, false) }
