package proxy

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/lockproxy/lockproxy/upstream"
)

// The upstream's health as an operator needs it: up or not, and when not,
// why, as one word of a bounded set (the reason label of
// lockproxy_upstream_up, the first word of /readyz's answer) and the
// setting to fix. It is learnt from every shared dial and from a check
// (checkUpstream) that /readyz and a scrape run when nothing dialled
// recently, so an idle proxy reports a down Valkey too.

// countUpstreamError counts a failed dial or a lost connection to Valkey by
// its reason (lockproxy_upstream_errors_total). Connections lockproxy
// closed itself, or dropped to follow a failover, are not errors.
func (p *Proxy) countUpstreamError(addr string, err error) {
	if err == nil || errors.Is(err, upstream.ErrClosed) || errors.Is(err, errFailover) {
		return
	}
	v := upstream.Classify(addr, err)
	if v.Up() {
		return // Valkey's own answer to the client's state (SELECT ...)
	}
	for i, r := range upstream.Reasons {
		if r == v.Reason {
			p.ops.upErrors[i].Add(1)
		}
	}
}

type upHealth struct {
	mu    sync.Mutex
	last  upstream.Verdict
	check sync.Mutex // one check at a time
}

// noteUpstream records what a connection attempt to Valkey showed, and
// logs a change: a wrong setting at ERROR, naming it; an unreachable
// Valkey at WARN; its return at INFO.
func (p *Proxy) noteUpstream(addr string, err error) upstream.Verdict {
	v := upstream.Classify(addr, err)
	h := &p.health
	h.mu.Lock()
	prev := h.last
	h.last = v
	h.mu.Unlock()
	if prev.Reason == v.Reason && prev.Detail == v.Detail {
		return v
	}
	switch v.Reason {
	case upstream.ReasonOK:
		if prev.Reason != "" {
			p.log.Info("Valkey answers again", "upstream", addr)
		}
	case upstream.ReasonTLSMismatch, upstream.ReasonCertificate, upstream.ReasonAuth, upstream.ReasonPermission:
		p.log.Error("lockproxy cannot use Valkey as configured", "upstream", addr, "reason", v.Reason, "setting", v.Setting, "err", v.Detail)
	default:
		p.log.Warn("Valkey is not answering", "upstream", addr, "reason", v.Reason, "err", v.Detail)
	}
	return v
}

// upstreamVerdict is the upstream's health now: a fresh check, or with
// !fresh the last verdict when it is recent (a second: several scrapes
// then cost one check).
func (p *Proxy) upstreamVerdict(ctx context.Context, fresh bool) upstream.Verdict {
	h := &p.health
	recent := func() (upstream.Verdict, bool) {
		h.mu.Lock()
		defer h.mu.Unlock()
		return h.last, !fresh && h.last.Reason != "" && time.Since(h.last.At) < time.Second
	}
	if v, ok := recent(); ok {
		return v
	}
	h.check.Lock()
	defer h.check.Unlock()
	if v, ok := recent(); ok {
		return v
	}
	addr, err := p.upstreamAddr()
	if err != nil {
		return p.noteUpstream(p.upstreamName(), &upstream.SetupError{Reason: upstream.ReasonError, Setting: "upstream.sentinel", Msg: err.Error()})
	}
	return p.noteUpstream(addr, p.checkUpstream(ctx, addr))
}

// checkUpstream connects to addr as a shared connection does (TLS, the
// proxy's login) and sends PING, within dial_timeout.
func (p *Proxy) checkUpstream(ctx context.Context, addr string) error {
	nc, err := p.dialer.Dial(ctx, addr)
	if err != nil {
		return err
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(p.opts.Upstream.DialTimeout.D()))
	st := p.sharedState(poolKey{proto: 2})
	st.Bare = true
	if err := p.handshake(nc, st); err != nil {
		if !isReply(err) && p.upstreamTLS() == nil && p.dialer.SpeaksTLS(addr) {
			return upstream.ErrPlaintextToTLS(addr)
		}
		return err
	}
	if _, err := nc.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
		return err
	}
	buf, n, err := upstream.ReadReply(nc, make([]byte, 0, 512))
	if err != nil {
		if p.upstreamTLS() == nil && p.dialer.SpeaksTLS(addr) {
			return upstream.ErrPlaintextToTLS(addr)
		}
		return err
	}
	if buf[0] == '-' {
		return &upstream.ReplyError{Msg: strings.TrimRight(string(buf[1:n]), "\r\n")}
	}
	return nil
}

func isReply(err error) bool {
	var re *upstream.ReplyError
	return errors.As(err, &re)
}
