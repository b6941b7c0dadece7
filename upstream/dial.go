package upstream

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"
)

// Opening a socket to Valkey: TCP and, with upstream TLS, the TLS
// handshake, together under one deadline (upstream.dial_timeout). Every
// connection lockproxy makes to Valkey — shared, dedicated, the side
// client's, the start-up probe's — comes through a Dialer, so none can
// wait on a handshake without a deadline, and a TLS failure is named in the
// operator's terms: a TLS/plaintext mismatch, a certificate Valkey or
// lockproxy refused.

// Dialer opens sockets to Valkey.
type Dialer struct {
	// Timeout bounds a dial with its TLS handshake, and each probe.
	Timeout time.Duration
	// TLS is the TLS configuration for Valkey now; nil for plaintext.
	TLS func() *tls.Config
	// Alive reports false once lockproxy shuts down: a failed TLS
	// handshake is then not probed further.
	Alive func() bool
}

// SetupError is a failure of the upstream settings rather than of the
// network: what happened, the setting to fix, and the reason reported by
// lockproxy_upstream_up and /readyz.
type SetupError struct {
	Reason  string // one of Reasons (health.go)
	Setting string // the configuration key to fix
	Msg     string
}

func (e *SetupError) Error() string { return e.Msg + "; check " + e.Setting }

// Dial connects to addr; with TLS it completes the handshake before
// returning. Both together, and the diagnosis of a failed handshake, take
// at most Timeout, and end by ctx's deadline.
func (d *Dialer) Dial(ctx context.Context, addr string) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, d.Timeout)
	defer cancel()
	nd := net.Dialer{KeepAlive: 30 * time.Second}
	nc, err := nd.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	tc := d.TLS()
	if tc == nil {
		return nc, nil
	}
	c := tls.Client(nc, tc)
	// A plaintext Valkey waits for the end of a line the TLS hello never
	// sends: the handshake would only end at the deadline, with nothing
	// said. Half-way there, ask the port in plaintext meanwhile.
	w := d.watchPlaintext(ctx, addr, func() { nc.Close() })
	err = c.HandshakeContext(ctx)
	plain := w.stop()
	if err != nil || plain {
		nc.Close()
		if plain {
			return nil, errTLSToPlaintext(addr)
		}
		return nil, d.tlsFailure(ctx, addr, err)
	}
	return c, nil
}

// plainWatch is a plaintext probe of a port whose TLS handshake is under
// way (watchPlaintext).
type plainWatch struct {
	timer *time.Timer
	found chan bool
}

// watchPlaintext asks addr in plaintext once half the time to ctx's
// deadline has passed, and calls abort when it answers so (the handshake
// then ends at once).
func (d *Dialer) watchPlaintext(ctx context.Context, addr string, abort func()) *plainWatch {
	w := &plainWatch{found: make(chan bool, 1)}
	dl, _ := ctx.Deadline()
	w.timer = time.AfterFunc(time.Until(dl)/2, func() {
		plain := d.Alive() && d.speaksPlaintext(ctx, addr)
		if plain {
			abort()
		}
		w.found <- plain
	})
	return w
}

// stop ends the watch, and reports whether the probe found plaintext.
func (w *plainWatch) stop() bool {
	if w.timer.Stop() {
		return false // never asked
	}
	return <-w.found
}

// tlsFailure names why the TLS handshake with addr failed.
func (d *Dialer) tlsFailure(ctx context.Context, addr string, err error) error {
	var rh tls.RecordHeaderError
	var hostErr x509.HostnameError
	var unknown x509.UnknownAuthorityError
	var invalid x509.CertificateInvalidError
	var verify *tls.CertificateVerificationError
	var alert tls.AlertError
	switch {
	case errors.As(err, &rh) && (rh.RecordHeader[0] == '-' || rh.RecordHeader[0] == '+'):
		// A RESP error or status line where a TLS record was due.
		return errTLSToPlaintext(addr)
	case errors.As(err, &rh) && string(rh.RecordHeader[:]) == "HTTP/":
		return &SetupError{ReasonError, "upstream.addr",
			fmt.Sprintf("the server at %s answers HTTP: it is not Valkey", addr)}
	case errors.As(err, &rh):
		return &SetupError{ReasonError, "upstream.addr",
			fmt.Sprintf("the server at %s answered the TLS hello with %q: it speaks neither TLS nor Valkey's protocol", addr, rh.RecordHeader[:])}
	case errors.As(err, &hostErr):
		return &SetupError{ReasonCertificate, "upstream.tls.server_name",
			fmt.Sprintf("Valkey at %s presented a certificate for another name (%v)", addr, hostErr)}
	case errors.As(err, &unknown), errors.As(err, &invalid), errors.As(err, &verify):
		return &SetupError{ReasonCertificate, "upstream.tls.ca_file",
			fmt.Sprintf("lockproxy does not trust the certificate of Valkey at %s (%v)", addr, err)}
	case errors.As(err, &alert):
		return &SetupError{ReasonCertificate, "upstream.tls.cert_file and upstream.tls.key_file",
			fmt.Sprintf("Valkey at %s refused the TLS handshake (%v): it wants a client certificate it trusts", addr, err)}
	}
	// The connection closed: a plaintext Valkey may drop what is not a
	// command. Ask it in plaintext by the deadline (unless lockproxy is
	// shutting down).
	if !IsTimeout(err) && d.Alive() && d.speaksPlaintext(ctx, addr) {
		return errTLSToPlaintext(addr)
	}
	return fmt.Errorf("TLS handshake with %s: %w", addr, err)
}

func errTLSToPlaintext(addr string) error {
	return &SetupError{ReasonTLSMismatch, "upstream.tls.enabled",
		fmt.Sprintf("upstream.tls.enabled is true but Valkey at %s does not speak TLS on that port (it answers in plaintext)", addr)}
}

// ErrPlaintextToTLS is the error of a plaintext connection to addr, which
// speaks TLS (SpeaksTLS).
func ErrPlaintextToTLS(addr string) error {
	return &SetupError{ReasonTLSMismatch, "upstream.tls.enabled",
		fmt.Sprintf("Valkey at %s speaks TLS on that port, but upstream.tls.enabled is false", addr)}
}

// speaksPlaintext reports whether addr answers a plaintext PING with a RESP
// reply (+PONG, or an error such as -NOAUTH), by ctx's deadline.
func (d *Dialer) speaksPlaintext(ctx context.Context, addr string) bool {
	var nd net.Dialer
	nc, err := nd.DialContext(ctx, "tcp", addr)
	if err != nil {
		return false
	}
	defer nc.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = nc.SetDeadline(dl)
	}
	if _, err := nc.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
		return false
	}
	line, err := bufio.NewReader(nc).ReadString('\n')
	return err == nil && (strings.HasPrefix(line, "+") || strings.HasPrefix(line, "-"))
}

// SpeaksTLS reports whether addr completes a TLS handshake (certificates
// unchecked: only the protocol is asked), within Timeout and by ctx's
// deadline.
func (d *Dialer) SpeaksTLS(ctx context.Context, addr string) bool {
	ctx, cancel := context.WithTimeout(ctx, d.Timeout)
	defer cancel()
	var nd net.Dialer
	nc, err := nd.DialContext(ctx, "tcp", addr)
	if err != nil {
		return false
	}
	defer nc.Close()
	c := tls.Client(nc, &tls.Config{InsecureSkipVerify: true}) // #nosec G402 -- a protocol probe; nothing is sent
	return c.HandshakeContext(ctx) == nil
}
