package proxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"

	"github.com/lockproxy/lockproxy/resp"
	"github.com/lockproxy/lockproxy/rewrite"
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
}

// epochPerFailover is the room a Sentinel failover epoch leaves for
// restarts without persistence between two failovers: the epoch lockproxy
// mints under is at least config-epoch × epochPerFailover.
const epochPerFailover = 256

// learnEpoch reads the run id of the Valkey process on a new connection
// (INFO server, before the connection is handed out, its handshake done)
// and passes the epoch clues on to the grants. In a cluster, and without
// lock rules, it does nothing: see docs/failover.md.
func (p *Proxy) learnEpoch(nc net.Conn) error {
	if p.cl != nil || !p.decider.Load().Active() {
		// Without lock rules nothing mints a token; a reload that
		// switches rules on reopens the shared connections (reload.go).
		return nil
	}
	floor := p.sentinelEpoch() * epochPerFailover
	if _, err := nc.Write(resp.AppendCommandStrings(nil, "INFO", "server")); err != nil {
		return err
	}
	buf, n, err := readReply(nc, make([]byte, 0, 2048))
	if err != nil {
		return err
	}
	run, err := parseRunID(buf[:n])
	if re, ok := err.(*replyError); ok {
		// A login that may not run INFO: its connection's grants mint
		// under the clues other connections learned, or under whatever
		// the hash says (docs/failover.md, Limits).
		p.log.Warn("cannot learn the primary's run id on this login's connection", "error", re.msg)
		return nil
	}
	if err != nil {
		// Not Valkey's answer (a server that is not Valkey): there is no
		// epoch to mint under.
		p.log.Warn("the upstream did not answer INFO server as Valkey does", "error", err)
		return nil
	}
	p.epochs.mu.Lock()
	changed := run != p.epochs.run
	if changed && p.epochs.run != "" {
		// A new process: every epoch used on the old one is to exceed.
		p.epochs.prev = max(p.epochs.prev, p.epochs.cur)
		p.epochs.cur = 0
	}
	p.epochs.run = run
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

// parseRunID reads the run_id of INFO server's reply (a bulk string in
// RESP2, a verbatim string in RESP3), or its error.
func parseRunID(b []byte) (string, error) {
	if len(b) > 0 && b[0] == '-' {
		return "", &replyError{msg: strings.TrimRight(string(b[1:]), "\r\n")}
	}
	_, rest, ok := strings.Cut(string(b), "\r\nrun_id:")
	if !ok {
		return "", fmt.Errorf("learning the run id: no run_id in %.60q", b)
	}
	run, _, _ := strings.Cut(rest, "\r\n")
	if run == "" || strings.Trim(run, "0123456789abcdef") != "" {
		return "", fmt.Errorf("learning the run id: run_id %q is not hexadecimal", run)
	}
	return run, nil
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
	p.masterMu.Lock()
	addr := p.master
	p.masterMu.Unlock()
	p.epochs.mu.Lock()
	if addr != "" && addr == p.epochs.sentinelFor {
		e := p.epochs.sentinelEpoch
		p.epochs.mu.Unlock()
		return e
	}
	p.epochs.mu.Unlock()
	var best int64
	answered := false
	for _, sa := range s.Addrs {
		sc := p.sentinelClient(sa)
		ctx, cancel := context.WithTimeout(context.Background(), p.opts.Upstream.DialTimeout.D())
		m, err := sc.Master(ctx, s.Master).Result()
		cancel()
		sc.Close()
		if err != nil {
			continue
		}
		if v, err := strconv.ParseInt(m["config-epoch"], 10, 64); err == nil {
			best, answered = max(best, v), true
		}
	}
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
