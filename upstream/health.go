package upstream

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The upstream's health as an operator needs it: up or not, and when not,
// why, as one word of a bounded set (the reason label of
// lockproxy_upstream_up, the first word of /readyz's answer) and the
// setting to fix, from the error of a connection to Valkey (Classify).

// The reasons, the whole range of the label.
const (
	ReasonOK          = "ok"
	ReasonUnreachable = "unreachable"  // no TCP connection (refused, no route, DNS)
	ReasonTimeout     = "timeout"      // connected or connecting, but no answer in time
	ReasonTLSMismatch = "tls_mismatch" // TLS on one side, plaintext on the other
	ReasonCertificate = "certificate"  // a certificate either side refused
	ReasonAuth        = "auth"         // Valkey refused the credentials
	ReasonPermission  = "permission"   // the ACL user lacks a right lockproxy needs
	ReasonError       = "error"        // anything else (a LOADING Valkey, a Sentinel without the master ...)
)

// Reasons is every reason, ReasonOK first (lockproxy_upstream_errors_total
// counts the others).
var Reasons = [...]string{ReasonOK, ReasonUnreachable, ReasonTimeout, ReasonTLSMismatch,
	ReasonCertificate, ReasonAuth, ReasonPermission, ReasonError}

// Verdict is the upstream's health at one moment.
type Verdict struct {
	Reason  string // one of Reasons
	Setting string // what to fix; empty when up
	Detail  string // what happened; empty when up
	At      time.Time
}

// Up reports whether Valkey was reachable and usable.
func (v Verdict) Up() bool { return v.Reason == ReasonOK }

// String is /readyz's text: the reason word first.
func (v Verdict) String() string {
	if v.Up() {
		return "ok"
	}
	s := v.Reason + ": " + v.Detail
	if v.Setting != "" && !strings.Contains(v.Detail, v.Setting) {
		s += " (check " + v.Setting + ")"
	}
	return s
}

// Classify turns the error of a connection to Valkey into a verdict.
func Classify(addr string, err error) Verdict {
	v := Verdict{Reason: ReasonOK, At: time.Now()}
	if err == nil {
		return v
	}
	v.Detail = err.Error()
	var se *SetupError
	var rights *RightsError
	var re *ReplyError
	var slow *SlowError
	var ne net.Error
	switch {
	case errors.As(err, &se):
		v.Reason, v.Setting, v.Detail = se.Reason, se.Setting, se.Msg
	case errors.As(err, &rights):
		v.Reason, v.Setting = ReasonPermission, "the ACL of upstream.username (see docs/operations.md, ACL recipes)"
		v.Detail = "Valkey at " + addr + ": " + rights.Error()
	case errors.As(err, &re):
		switch code, _, _ := strings.Cut(re.Msg, " "); code {
		case "WRONGPASS", "NOAUTH", "AUTH":
			v.Reason, v.Setting = ReasonAuth, "upstream.username and upstream.password (or password_file)"
		case "NOPERM":
			v.Reason, v.Setting = ReasonPermission, "the ACL of upstream.username (see docs/operations.md, ACL recipes)"
		default:
			// Valkey answered (a SELECT of a database it does not
			// have ...): the client's error; Valkey itself is up.
			return Verdict{Reason: ReasonOK, At: v.At}
		}
		v.Detail = "Valkey at " + addr + " answered " + re.Msg
	case errors.As(err, &slow):
		v.Reason, v.Setting = ReasonTimeout, slow.Setting
		if v.Setting == "" {
			v.Setting = "upstream.reply_timeout"
		}
	case errors.As(err, &ne) && ne.Timeout():
		v.Reason, v.Setting = ReasonTimeout, "upstream.addr and upstream.dial_timeout"
	case errors.Is(err, ErrClosed):
		v.Reason = ReasonError
	default:
		var oe *net.OpError
		if errors.As(err, &oe) {
			v.Reason, v.Setting = ReasonUnreachable, "upstream.addr"
		} else {
			v.Reason = ReasonError
		}
	}
	return v
}

// Health is the upstream's health as last seen: noted from every dial of
// the proxy's own (Note), checked again when stale (Connector.Verdict),
// and the failures counted by reason (Count). The zero value is ready
// once Log is set.
type Health struct {
	Log *slog.Logger
	// Errors counts failed dials and lost connections by reason, in the
	// order of Reasons (Errors[0], ok, stays 0):
	// lockproxy_upstream_errors_total.
	Errors [len(Reasons)]atomic.Int64

	// Wait is how long a verdict waits for a check under way before it
	// takes the last one; 0 waits for the check.
	Wait time.Duration

	mu      sync.Mutex
	last    Verdict
	running chan struct{} // closed when the check under way ends; nil when none
}

// Count counts a failed dial or a lost connection to Valkey by its reason.
// Connections lockproxy closed itself (ErrClosed), or dropped to follow a
// failover (ErrFailover), are not errors, nor Valkey's own answer to the
// client's state (SELECT ...).
func (h *Health) Count(addr string, err error) {
	if err == nil || errors.Is(err, ErrClosed) || errors.Is(err, ErrFailover) {
		return
	}
	v := Classify(addr, err)
	for i, r := range Reasons {
		if r == v.Reason && !v.Up() {
			h.Errors[i].Add(1)
		}
	}
}

// Note records what a connection attempt to Valkey showed, and logs a
// change: a wrong setting at ERROR, naming it; an unreachable Valkey at
// WARN; its return at INFO.
func (h *Health) Note(addr string, err error) Verdict {
	v := Classify(addr, err)
	h.mu.Lock()
	prev := h.last
	h.last = v
	h.mu.Unlock()
	if prev.Reason == v.Reason && prev.Detail == v.Detail {
		return v
	}
	switch v.Reason {
	case ReasonOK:
		if prev.Reason != "" {
			h.Log.Info("Valkey answers again", "upstream", addr)
		}
	case ReasonTLSMismatch, ReasonCertificate, ReasonAuth, ReasonPermission:
		h.Log.Error("lockproxy cannot use Valkey as configured", "upstream", addr, "reason", v.Reason, "setting", v.Setting, "err", v.Detail)
	default:
		h.Log.Warn("Valkey is not answering", "upstream", addr, "reason", v.Reason, "setting", v.Setting, "err", v.Detail)
	}
	return v
}

// Last is the last verdict, as it is; its Reason is empty before any.
func (h *Health) Last() Verdict {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.last
}

// recent is the last verdict when it is less than a second old and not
// fresh asked for (several scrapes then cost one check); else check runs
// in the background (one at a time: a second caller waits for the
// first's), and the caller waits for it until ctx ends or Wait passes,
// then takes the last verdict. A probe so answers in Wait whatever Valkey
// does.
func (h *Health) recent(ctx context.Context, fresh bool, check func() Verdict) Verdict {
	h.mu.Lock()
	if !fresh && h.last.Reason != "" && time.Since(h.last.At) < time.Second {
		v := h.last
		h.mu.Unlock()
		return v
	}
	done := h.running
	if done == nil {
		done = make(chan struct{})
		h.running = done
		go func() {
			check()
			h.mu.Lock()
			h.running = nil
			h.mu.Unlock()
			close(done)
		}()
	}
	h.mu.Unlock()
	var waited <-chan time.Time
	if h.Wait > 0 {
		t := time.NewTimer(h.Wait)
		defer t.Stop()
		waited = t.C
	}
	select {
	case <-done:
	case <-waited:
	case <-ctx.Done():
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.last.Reason == "" {
		return Verdict{Reason: ReasonTimeout, Setting: "upstream.addr and upstream.dial_timeout",
			Detail: "the first check of Valkey has not finished yet", At: time.Now()}
	}
	return h.last
}
