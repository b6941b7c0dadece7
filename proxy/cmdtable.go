package proxy

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/lockproxy/lockproxy/commands"
	"github.com/lockproxy/lockproxy/keyspec"
	"github.com/lockproxy/lockproxy/rewrite"
	"github.com/lockproxy/lockproxy/scriptcheck"
)

// cmds is the command knowledge now: derived from the loaded table, or the
// fallback while there is none. Two atomic loads on the command path; the
// derivation runs once per table.
func (p *Proxy) cmds() *commands.Table {
	c := p.known.Load()
	t := p.decider.Load().Table
	if t == nil {
		if c == nil {
			return commands.Fallback
		}
		return c
	}
	if c == nil || c.Source() != t {
		c = commands.FromTable(t)
		p.known.Store(c)
	}
	return c
}

// loadTable reads Valkey's command table (COMMAND) once the upstream is
// reachable, and installs a decider that has it. A client's command may
// wait for it, so the read (its connection's set-up included) takes at
// most reply_timeout; a caller that waited for another's read gets its
// outcome, and the next read is after the reconnect backoff from the
// last one's end.
func (p *Proxy) loadTable() *rewrite.Decider {
	asked := time.Now()
	p.tableMu.Lock()
	defer p.tableMu.Unlock()
	d := p.decider.Load()
	// A read that ended after this call began (another caller's, waited
	// for on the lock) is this call's outcome too: starting another would
	// make its caller wait for two reads, past reply_timeout.
	if d.Table != nil || p.tableTried.After(asked) || time.Since(p.tableTried) < p.opts.Upstream.ReconnectBackoff.D() {
		return d
	}
	ctx, cancel := context.WithTimeout(p.life, p.opts.Upstream.ReplyTimeout.D())
	defer cancel()
	t, err := keyspec.Load(ctx, p.side)
	p.tableTried = time.Now()
	if err != nil {
		p.tableErr = err
		if strings.HasPrefix(err.Error(), "NOPERM") {
			p.log.Error("lockproxy cannot read Valkey's command table: its user may not run COMMAND", "upstream", p.tableAddr(),
				"setting", "the ACL of upstream.username: add +command", "err", err)
			return d
		}
		// The side client's error may only say its deadline passed: the
		// last check says why. One starts when the last is stale (it
		// logs a wrong setting at ERROR), not waited for here: a
		// client's command may be waiting.
		now, cancel := context.WithCancel(p.life)
		cancel()
		p.upstreamVerdict(now, false)
		if v := p.connector.Health.Last(); v.Reason != "" && !v.Up() {
			p.tableErr = errors.New(v.String())
		}
		p.log.Warn("cannot read Valkey's command table yet", "upstream", p.tableAddr(), "err", p.tableErr)
		return d
	}
	p.tableErr = nil
	scriptcheck.UseTable(t) // key effects in scripts, from the same table
	nd := *d
	nd.Table = t
	nd.Commands = commands.FromTable(t) // the gated list the monitor refuses (rewrite/gate.go)
	p.known.Store(nd.Commands)
	p.decider.Store(&nd)
	return &nd
}

// movableKeys is COMMAND GETKEYSANDFLAGS's answer for the command raw,
// asked off the loop.
type movableKeys struct {
	raw  []byte
	keys []keyspec.KeyWithFlags
	err  error
}

// tableReady reports whether loadTable would return at once: the table is
// loaded, or the last attempt failed within the reconnect backoff.
func (p *Proxy) tableReady() bool {
	if p.decider.Load().Table != nil {
		return true
	}
	if !p.tableMu.TryLock() {
		return false // being loaded
	}
	defer p.tableMu.Unlock()
	return p.decider.Load().Table != nil || time.Since(p.tableTried) < p.opts.Upstream.ReconnectBackoff.D()
}

// getKeys asks Valkey which keys a command with movable keys touches.
func (p *Proxy) getKeys(args [][]byte) ([]keyspec.KeyWithFlags, error) {
	ctx, cancel := context.WithTimeout(context.Background(), p.opts.Upstream.DialTimeout.D())
	defer cancel()
	q := make([]interface{}, 0, len(args)+2)
	q = append(q, "COMMAND", "GETKEYSANDFLAGS")
	for _, a := range args {
		q = append(q, string(a))
	}
	reply, err := p.side.Do(ctx, q...).Slice()
	if err != nil {
		return nil, err
	}
	return keyspec.GetKeysAndFlags(reply)
}

// noTableError is the refusal while the command table is missing, with the
// address tried and why it failed.
func (p *Proxy) noTableError() string {
	p.tableMu.Lock()
	err := p.tableErr
	p.tableMu.Unlock()
	return errNoCommandTable(p.tableAddr(), err)
}

// tableAddr names the upstream in messages: the address new connections go
// to, never asking Sentinel (a message must not wait for it).
func (p *Proxy) tableAddr() string {
	if s := p.connector.Target.Sentinel; s != nil {
		if addr := s.Known(); addr != "" {
			return addr
		}
		return fmt.Sprintf("Sentinel master %q (primary unknown)", s.Master)
	}
	if addr, err := p.upstreamAddr(p.life); err == nil {
		return addr
	}
	return p.opts.Upstream.Addr
}
