package proxy

import (
	"context"
	"errors"
	"github.com/lockproxy/lockproxy/upstream"
	"net"
	"strings"
	"sync"
	"time"
)

// The upstream's health as an operator needs it: up or not, and when not,
// why, as one word of a bounded set (the reason label of
// lockproxy_upstream_up, the first word of /readyz's answer) and the
// setting to fix. It is learnt from every shared dial and from a check
// (checkUpstream) that /readyz and a scrape run when nothing dialled
// recently, so an idle proxy reports a down Valkey too.

// The reasons, the whole range of the label.
const (
	reasonOK          = "ok"
	reasonUnreachable = "unreachable"              // no TCP connection (refused, no route, DNS)
	reasonTimeout     = "timeout"                  // connected or connecting, but no answer in time
	reasonTLSMismatch = upstream.ReasonTLSMismatch // TLS on one side, plaintext on the other
	reasonCertificate = upstream.ReasonCertificate // a certificate either side refused
	reasonAuth        = "auth"                     // Valkey refused the credentials
	reasonPermission  = "permission"               // the ACL user lacks a right lockproxy needs
	reasonError       = "error"                    // anything else (a LOADING Valkey, a Sentinel without the master ...)
)

var upstreamReasonList = [...]string{reasonOK, reasonUnreachable, reasonTimeout, reasonTLSMismatch,
	reasonCertificate, reasonAuth, reasonPermission, reasonError}

// countUpstreamError counts a failed dial or a lost connection to Valkey by
// its reason (lockproxy_upstream_errors_total). Connections lockproxy
// closed itself, or dropped to follow a failover, are not errors.
func (p *Proxy) countUpstreamError(addr string, err error) {
	if err == nil || errors.Is(err, upstream.ErrClosed) || errors.Is(err, errFailover) {
		return
	}
	v := classifyUpstream(addr, err)
	if v.up() {
		return // Valkey's own answer to the client's state (SELECT ...)
	}
	for i, r := range upstreamReasonList {
		if r == v.reason {
			p.ops.upErrors[i].Add(1)
		}
	}
}

// upVerdict is the upstream's health at one moment.
type upVerdict struct {
	reason  string
	setting string // what to fix; empty when up
	detail  string // what happened; empty when up
	at      time.Time
}

func (v upVerdict) up() bool { return v.reason == reasonOK }

// String is /readyz's text: the reason word first.
func (v upVerdict) String() string {
	if v.up() {
		return "ok"
	}
	s := v.reason + ": " + v.detail
	if v.setting != "" && !strings.Contains(v.detail, v.setting) {
		s += " (check " + v.setting + ")"
	}
	return s
}

type upHealth struct {
	mu    sync.Mutex
	last  upVerdict
	check sync.Mutex // one check at a time
}

// classifyUpstream turns the error of a connection to Valkey into a verdict.
func classifyUpstream(addr string, err error) upVerdict {
	v := upVerdict{reason: reasonOK, at: time.Now()}
	if err == nil {
		return v
	}
	v.detail = err.Error()
	var se *upstream.SetupError
	var re *upstream.ReplyError
	var slow *upstream.SlowError
	var ne net.Error
	switch {
	case errors.As(err, &se):
		v.reason, v.setting, v.detail = se.Reason, se.Setting, se.Msg
	case errors.As(err, &re):
		switch code, _, _ := strings.Cut(re.Msg, " "); code {
		case "WRONGPASS", "NOAUTH", "AUTH":
			v.reason, v.setting = reasonAuth, "upstream.username and upstream.password (or password_file)"
		case "NOPERM":
			v.reason, v.setting = reasonPermission, "the ACL of upstream.username (see docs/operations.md, ACL recipes)"
		default:
			// Valkey answered (a SELECT of a database it does not
			// have ...): the client's error; Valkey itself is up.
			return upVerdict{reason: reasonOK, at: v.at}
		}
		v.detail = "Valkey at " + addr + " answered " + re.Msg
	case errors.As(err, &slow):
		v.reason, v.setting = reasonTimeout, "upstream.reply_timeout"
	case errors.As(err, &ne) && ne.Timeout():
		v.reason, v.setting = reasonTimeout, "upstream.addr and upstream.dial_timeout"
	case errors.Is(err, upstream.ErrClosed):
		v.reason = reasonError
	default:
		var oe *net.OpError
		if errors.As(err, &oe) {
			v.reason, v.setting = reasonUnreachable, "upstream.addr"
		} else {
			v.reason = reasonError
		}
	}
	return v
}

// noteUpstream records what a connection attempt to Valkey showed, and
// logs a change: a wrong setting at ERROR, naming it; an unreachable
// Valkey at WARN; its return at INFO.
func (p *Proxy) noteUpstream(addr string, err error) upVerdict {
	v := classifyUpstream(addr, err)
	h := &p.health
	h.mu.Lock()
	prev := h.last
	h.last = v
	h.mu.Unlock()
	if prev.reason == v.reason && prev.detail == v.detail {
		return v
	}
	switch v.reason {
	case reasonOK:
		if prev.reason != "" {
			p.log.Info("Valkey answers again", "upstream", addr)
		}
	case reasonTLSMismatch, reasonCertificate, reasonAuth, reasonPermission:
		p.log.Error("lockproxy cannot use Valkey as configured", "upstream", addr, "reason", v.reason, "setting", v.setting, "err", v.detail)
	default:
		p.log.Warn("Valkey is not answering", "upstream", addr, "reason", v.reason, "err", v.detail)
	}
	return v
}

// upstreamVerdict is the upstream's health now: a fresh check, or with
// !fresh the last verdict when it is recent (a second: several scrapes
// then cost one check).
func (p *Proxy) upstreamVerdict(ctx context.Context, fresh bool) upVerdict {
	h := &p.health
	recent := func() (upVerdict, bool) {
		h.mu.Lock()
		defer h.mu.Unlock()
		return h.last, !fresh && h.last.reason != "" && time.Since(h.last.at) < time.Second
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
		return p.noteUpstream(p.upstreamName(), &upstream.SetupError{Reason: reasonError, Setting: "upstream.sentinel", Msg: err.Error()})
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
