package upstream

import (
	"errors"
	"net"
	"testing"
	"time"
)

// TestClassify: each way a connection to Valkey fails maps to one reason
// word of lockproxy_upstream_up, and Valkey's own answer to a client's
// state (a SELECT it refused) is no failure of the upstream.
func TestClassify(t *testing.T) {
	for _, c := range []struct {
		err     error
		reason  string
		setting string
	}{
		{nil, ReasonOK, ""},
		{&ReplyError{Msg: "ERR DB index is out of range"}, ReasonOK, ""},
		{&ReplyError{Msg: "WRONGPASS invalid username-password pair"}, ReasonAuth, "upstream.username and upstream.password (or password_file)"},
		{&ReplyError{Msg: "NOPERM this user has no permissions"}, ReasonPermission, "the ACL of upstream.username (see docs/operations.md, ACL recipes)"},
		{&NodeError{Addr: "a:1", Err: &SlowError{Wait: time.Second}}, ReasonTimeout, "upstream.reply_timeout"},
		{ErrPlaintextToTLS("a:1"), ReasonTLSMismatch, "upstream.tls.enabled"},
		{replyTimeout(time.Second), ReasonTimeout, "upstream.addr and upstream.dial_timeout"},
		{&net.OpError{Op: "dial", Err: errors.New("connection refused")}, ReasonUnreachable, "upstream.addr"},
		{ErrClosed, ReasonError, ""},
	} {
		v := Classify("a:1", c.err)
		if v.Reason != c.reason || v.Setting != c.setting || v.Up() != (c.reason == ReasonOK) {
			t.Errorf("%v: %q (%q), want %q (%q)", c.err, v.Reason, v.Setting, c.reason, c.setting)
		}
	}
}
