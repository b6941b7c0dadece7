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

// The epoch a primary mints tokens under (docs/failover.md): every new
// upstream connection to one primary establishes it before it carries
// anything else, so no grant is minted on a Valkey process before its epoch
// is above every epoch used on the process before it. The epoch is kept in
// Valkey (rewrite.EpochKey, in every database), so every lockproxy in
// front of the primary mints under the same one; what this instance saw
// last is kept here too, so that a primary that lost its data (restarted
// without persistence) cannot make it forget.
type epochMemory struct {
	mu sync.Mutex
	// high: the highest epoch this instance established anywhere; run: the
	// run id of the Valkey process it was established on last.
	high int64
	run  string
	// sentinelFor, sentinelEpoch: the config-epoch Sentinel reported for
	// the primary at sentinelFor (asked again when the primary moves).
	sentinelFor   string
	sentinelEpoch int64
}

// epochPerFailover is the room a Sentinel failover epoch leaves for
// restarts without persistence between two failovers: the epoch lockproxy
// mints under is at least config-epoch × epochPerFailover.
const epochPerFailover = 256

// establishEpochScript reads the run id of the Valkey process it runs on
// and the epoch hash of every database, and decides the epoch:
//
//	the hash says this run, in every database, at or above what this
//	instance saw (ARGV[2]) and Sentinel's floor (ARGV[1]): it stands;
//	no hash anywhere, and this instance never saw another run: ARGV[1]
//	(0 without Sentinel, and then nothing is written: a grant is the plain
//	INCR it always was);
//	otherwise (a new run, a database flushed around lockproxy, a higher
//	epoch seen elsewhere): one above the highest known, and at least
//	ARGV[1].
//
// ARGV[3] is the run this instance established on last ("" if none). It
// writes the epoch, the run and, when the epoch changed, when (Valkey's
// clock, in ms: "changed", where a rule's lock delay starts) in every
// database, and answers {epoch, run}.
var establishEpochScript = `local run = string.match(redis.call('INFO', 'server'), 'run_id:(%x+)')
local base, mem, seen = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3]
local e, found, same, dbs = 0, false, true, 0
while redis.pcall('SELECT', dbs).ok do
  local h = redis.call('HMGET', KEYS[1], 'epoch', 'run')
  if h[1] then
    found = true
    e = math.max(e, tonumber(h[1]))
    if h[2] ~= run then same = false end
  else
    same = false
  end
  dbs = dbs + 1
end
local n
if found and same and e >= mem and e >= base then return {e, run} end
if not found and (seen == '' or seen == run) and mem == 0 then
  n = base
else
  n = math.max(math.max(e, mem) + 1, base)
end
if n > 0 then
  local t = redis.call('TIME')
  local changed = string.format('%d', t[1] * 1000 + math.floor(t[2] / 1000))
  for db = 0, dbs - 1 do
    redis.call('SELECT', db)
    redis.call('HSET', KEYS[1], 'epoch', string.format('%d', n), 'run', run, 'changed', changed)
  end
end
return {n, run}`

// establishEpoch runs establishEpochScript on a new connection (before it
// is handed out, its handshake done) and remembers the epoch. In a
// cluster, and without lock rules, it does nothing: see docs/failover.md.
func (p *Proxy) establishEpoch(nc net.Conn) error {
	if p.cl != nil || !p.decider.Load().Active() {
		// Without lock rules nothing mints a token; a reload that
		// switches rules on reopens the shared connections (reload.go).
		return nil
	}
	base := p.sentinelEpoch() * epochPerFailover
	p.epochs.mu.Lock()
	mem, seen := p.epochs.high, p.epochs.run
	p.epochs.mu.Unlock()
	cmd := resp.AppendCommandStrings(nil, "EVAL", establishEpochScript, "1", rewrite.EpochKey,
		strconv.FormatInt(base, 10), strconv.FormatInt(mem, 10), seen)
	if _, err := nc.Write(cmd); err != nil {
		return err
	}
	buf, n, err := readReply(nc, make([]byte, 0, 256))
	if err != nil {
		return err
	}
	epoch, run, err := parseEpochReply(buf[:n])
	if _, ok := err.(*replyError); !ok && err != nil {
		// Not Valkey's answer to the script (a server that is not
		// Valkey): there is no epoch to mint under.
		p.log.Warn("the upstream did not answer the epoch's script as Valkey does", "error", err)
		return nil
	}
	if re, ok := err.(*replyError); ok && strings.HasPrefix(re.msg, "NOPERM") {
		// A login that may not run INFO or write lockproxy's hash: its
		// connection mints under whatever epoch the hash says (see
		// docs/failover.md, "What lockproxy's user needs").
		p.log.Warn("cannot establish the primary's epoch on this login's connection", "error", re.msg)
		return nil
	}
	if err != nil {
		return err
	}
	p.epochs.mu.Lock()
	changed := epoch != p.epochs.high || run != p.epochs.run
	p.epochs.high = max(p.epochs.high, epoch)
	p.epochs.run = run
	p.epochs.mu.Unlock()
	if changed && (epoch > 0 || seen != "") {
		p.log.Info("minting tokens under a primary's epoch", "epoch", epoch, "run_id", run, "floor", epoch<<rewrite.EpochShift)
	}
	return nil
}

// parseEpochReply reads establishEpochScript's {epoch, run}
// ("*2\r\n:<epoch>\r\n$<n>\r\n<run>\r\n", in RESP2 and RESP3 alike), or
// its error.
func parseEpochReply(b []byte) (int64, string, error) {
	if len(b) > 0 && b[0] == '-' {
		return 0, "", &replyError{msg: strings.TrimRight(string(b[1:]), "\r\n")}
	}
	f := strings.Split(string(b), "\r\n")
	if len(f) != 5 || f[0] != "*2" || !strings.HasPrefix(f[1], ":") {
		return 0, "", fmt.Errorf("establishing the epoch: unexpected reply %q", b)
	}
	n, err := strconv.ParseInt(f[1][1:], 10, 64)
	if err != nil {
		return 0, "", fmt.Errorf("establishing the epoch: unexpected reply %q", b)
	}
	return n, f[3], nil
}

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

var errRulesOn = errors.New("lock rules were switched on: the connection is reopened to establish the primary's epoch")

// reopenShared fails every shared upstream connection (sessions' own keep
// theirs: a transaction or a subscription would be lost).
func (p *Proxy) reopenShared(err error) { p.reopen(err, false) }
