package e2e_test

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockproxy/lockproxy/internal/valkeytest"
	"github.com/redis/go-redis/v9"
)

// TLS end to end, through the lockproxy binary and its configuration file:
// a TLS listener that requires client certificates, and TLS towards a
// valkey-server that requires one from the proxy. Certificates are made by
// the test.

// testCA is a certificate authority made for one test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

var serial struct {
	sync.Mutex
	n int64
}

// issue makes a certificate for name (DNS names and 127.0.0.1) with the
// given use, and returns its PEM certificate and key.
func (ca *testCA) issue(t *testing.T, name string, usage x509.ExtKeyUsage) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial.Lock()
	serial.n++
	sn := serial.n + 100
	serial.Unlock()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(sn),
		Subject:      pkix.Name{CommonName: name},
		DNSNames:     []string{name},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})
}

// requireValkeyTLS skips when valkey-server was built without TLS: it is
// started on a TLS port only, with the given files, and must keep running.
func requireValkeyTLS(t *testing.T, tlsArgs ...string) {
	t.Helper()
	args := append([]string{"--port", "0", "--tls-port", fmt.Sprint(valkeytest.FreePort(t)), "--save", "", "--appendonly", "no"}, tlsArgs...)
	cmd := exec.Command(valkeytest.Binary(), args...)
	out := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", valkeytest.Binary(), err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
		if strings.Contains(out.String(), "TLS") || strings.Contains(out.String(), "tls") {
			t.Skipf("%s has no TLS support: %s", valkeytest.Binary(), out.String())
		}
		t.Fatalf("%s with a TLS port exited: %s", valkeytest.Binary(), out.String())
	case <-time.After(500 * time.Millisecond):
		cmd.Process.Kill()
		<-done
	}
}

// waitLog waits for the proxy's log to mention want: the reason a client
// only sees as -UPSTREAM is in the operator's log.
func waitLog(t *testing.T, lp *lockproxyProc, want string) {
	t.Helper()
	for start := time.Now(); time.Since(start) < 5*time.Second; time.Sleep(20 * time.Millisecond) {
		if strings.Contains(lp.log(), want) {
			for _, line := range strings.Split(lp.log(), "\n") {
				if strings.Contains(line, want) {
					t.Logf("log: %s", line)
					return
				}
			}
		}
	}
	t.Fatalf("the proxy's log does not say %q:\n%s", want, lp.log())
}

// tlsTalk dials addr with cfg, sends PING and returns the reply line, or the
// error that came instead.
func tlsTalk(addr string, cfg *tls.Config) (string, error) {
	nc, err := tls.DialWithDialer(&net.Dialer{Timeout: 3 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		return "", err
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(3 * time.Second))
	if _, err := nc.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
		return "", err
	}
	return bufio.NewReader(nc).ReadString('\n')
}

func TestTLSListenerAndUpstream(t *testing.T) {
	dir := t.TempDir()
	ca := newTestCA(t, "lockproxy test CA")
	rogue := newTestCA(t, "rogue CA")
	writeFile(t, filepath.Join(dir, "ca.crt"), string(ca.pem))
	vc, vk := ca.issue(t, "valkey.test", x509.ExtKeyUsageServerAuth)
	pc, pk := ca.issue(t, "lockproxy.test", x509.ExtKeyUsageServerAuth)
	uc, uk := ca.issue(t, "lockproxy-upstream", x509.ExtKeyUsageClientAuth)
	ac, ak := ca.issue(t, "app", x509.ExtKeyUsageClientAuth)
	rc, rk := rogue.issue(t, "intruder", x509.ExtKeyUsageClientAuth)
	for name, b := range map[string][]byte{
		"valkey.crt": vc, "valkey.key": vk, "proxy.crt": pc, "proxy.key": pk,
		"upstream-client.crt": uc, "upstream-client.key": uk,
	} {
		writeFile(t, filepath.Join(dir, name), string(b))
	}

	requireValkeyTLS(t, "--tls-cert-file", filepath.Join(dir, "valkey.crt"), "--tls-key-file", filepath.Join(dir, "valkey.key"),
		"--tls-ca-cert-file", filepath.Join(dir, "ca.crt"))

	// Valkey with a TLS port that requires client certificates; its plain
	// port is only for the test's own checks.
	tlsPort := valkeytest.FreePort(t)
	srv := valkeytest.Start(t,
		fmt.Sprintf("tls-port %d", tlsPort),
		"tls-cert-file "+filepath.Join(dir, "valkey.crt"),
		"tls-key-file "+filepath.Join(dir, "valkey.key"),
		"tls-ca-cert-file "+filepath.Join(dir, "ca.crt"),
		"tls-auth-clients yes",
	)
	direct := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer direct.Close()

	bin := buildBinary(t, "../cmd/lockproxy")
	config := func(name, upstreamTLS string) string {
		// Relative paths: resolved against the config file's directory.
		return writeFile(t, filepath.Join(dir, name), fmt.Sprintf(`listen: 127.0.0.1:0
tls:
  cert_file: proxy.crt
  key_file: proxy.key
  client_ca_file: ca.crt
upstream:
  addr: 127.0.0.1:%d
  dial_timeout: 2s
  reply_timeout: 2s
  reconnect_backoff: 10ms
  tls:
    enabled: true
%s
locks:
  - pattern: "*:lock"
    release: rewrite
`, tlsPort, upstreamTLS))
	}
	good := startLockproxy(t, bin, config("good.yaml", `    ca_file: ca.crt
    cert_file: upstream-client.crt
    key_file: upstream-client.key
    server_name: valkey.test`))

	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.pem)
	appCert, err := tls.X509KeyPair(ac, ak)
	if err != nil {
		t.Fatal(err)
	}
	rogueCert, err := tls.X509KeyPair(rc, rk)
	if err != nil {
		t.Fatal(err)
	}
	clientTLS := &tls.Config{RootCAs: roots, ServerName: "lockproxy.test", Certificates: []tls.Certificate{appCert}, MinVersion: tls.VersionTLS12}

	t.Run("client_with_certificate", func(t *testing.T) {
		c := redis.NewClient(&redis.Options{Addr: good.addr, TLSConfig: clientTLS, MaxRetries: -1})
		defer c.Close()
		eq(t, c.Ping(ctx).Val(), "PONG")
		eq(t, c.Set(ctx, "over-tls", "yes", 0).Val(), "OK")
		eq(t, direct.Get(ctx, "over-tls").Val(), "yes") // it reached Valkey, over its TLS port
		// The lock rules work over TLS too.
		eq(t, c.SetNX(ctx, "tls:lock", "tok", 10*time.Second).Val(), true)
		other := redis.NewClient(&redis.Options{Addr: good.addr, TLSConfig: clientTLS, MaxRetries: -1})
		defer other.Close()
		mustContain(t, fmt.Sprint(other.Del(ctx, "tls:lock").Err()), "NOTOWNER")
		eq(t, c.Del(ctx, "tls:lock").Val(), int64(1))
		eq(t, direct.Exists(ctx, "tls:lock").Val(), int64(0))
	})
	t.Run("client_without_certificate", func(t *testing.T) {
		cfg := clientTLS.Clone()
		cfg.Certificates = nil
		got, err := tlsTalk(good.addr, cfg)
		t.Logf("no client certificate: %q %v", got, err)
		if err == nil || strings.Contains(got, "PONG") {
			t.Fatalf("served a client without a certificate: %q", got)
		}
	})
	t.Run("client_certificate_from_another_CA", func(t *testing.T) {
		cfg := clientTLS.Clone()
		cfg.Certificates = nil
		// Offer it even though the server asks for certificates of its own
		// CA (Go's client would otherwise send none).
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &rogueCert, nil }
		got, err := tlsTalk(good.addr, cfg)
		t.Logf("rogue client certificate: %q %v", got, err)
		if err == nil || strings.Contains(got, "PONG") {
			t.Fatalf("served a client whose certificate another CA signed: %q", got)
		}
	})
	t.Run("plain_client_on_TLS_listener", func(t *testing.T) {
		nc, err := net.DialTimeout("tcp", good.addr, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		_ = nc.SetDeadline(time.Now().Add(3 * time.Second))
		nc.Write([]byte("*1\r\n$4\r\nPING\r\n"))
		line, err := bufio.NewReader(nc).ReadString('\n')
		t.Logf("plain TCP client: %q %v", line, err)
		if strings.Contains(line, "PONG") {
			t.Fatal("a plain client was served on the TLS listener")
		}
	})
	t.Run("proxy_checks_Valkey_certificate_name", func(t *testing.T) {
		lp := startLockproxy(t, bin, config("wrong-name.yaml", `    ca_file: ca.crt
    cert_file: upstream-client.crt
    key_file: upstream-client.key
    server_name: wrong.test`))
		got, err := tlsTalk(lp.addr, clientTLS)
		t.Logf("upstream server_name wrong.test: %q %v", strings.TrimSpace(got), err)
		if err != nil {
			t.Fatal(err)
		}
		mustContain(t, got, "-UPSTREAM")
		waitLog(t, lp, "certificate is valid for valkey.test, not wrong.test")
	})
	t.Run("proxy_without_upstream_client_certificate", func(t *testing.T) {
		lp := startLockproxy(t, bin, config("no-client-cert.yaml", `    ca_file: ca.crt
    server_name: valkey.test`))
		got, err := tlsTalk(lp.addr, clientTLS)
		t.Logf("no upstream client certificate: %q %v", strings.TrimSpace(got), err)
		if err != nil {
			t.Fatal(err)
		}
		mustContain(t, got, "-UPSTREAM")
		// Valkey refuses the handshake (the proxy sees the alert or, as
		// TLS 1.3 finishes the client's side first, a reset): its log
		// says why.
		const why = "peer did not return a certificate"
		waitFor(t, 5*time.Second, "Valkey logs: "+why, func() bool {
			log, _ := os.ReadFile(filepath.Join(srv.Dir, "server.log"))
			return strings.Contains(string(log), why)
		})
		waitLog(t, lp, "cannot read Valkey's command table")
	})
	t.Run("proxy_does_not_trust_unknown_CA", func(t *testing.T) {
		writeFile(t, filepath.Join(dir, "rogue-ca.crt"), string(rogue.pem))
		lp := startLockproxy(t, bin, config("rogue-ca.yaml", `    ca_file: rogue-ca.crt
    cert_file: upstream-client.crt
    key_file: upstream-client.key
    server_name: valkey.test`))
		got, err := tlsTalk(lp.addr, clientTLS)
		t.Logf("upstream CA that did not sign Valkey's certificate: %q %v", strings.TrimSpace(got), err)
		if err != nil {
			t.Fatal(err)
		}
		mustContain(t, got, "-UPSTREAM")
		waitLog(t, lp, "certificate signed by unknown authority")
	})
}
