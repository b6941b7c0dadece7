package valkeytest

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Server is one running server process.
type Server struct {
	Addr string // host:port on loopback
	Port int
	Bin  string // the binary that runs, e.g. "valkey-server"
	Dir  string // its working directory
	cmd  *exec.Cmd
	args []string
}

// Binary names the server binary the tests use: $LOCKPROXY_TEST_SERVER, else
// valkey-server.
func Binary() string {
	if b := os.Getenv("LOCKPROXY_TEST_SERVER"); b != "" {
		return b
	}
	return "valkey-server"
}

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort(tb testing.TB) int {
	tb.Helper()
	port, err := freePort()
	if err != nil {
		tb.Fatalf("valkeytest: no free port: %v", err)
	}
	return port
}

// Start runs a server with the given extra configuration directives
// ("requirepass secret", "maxclients 50", ...) and stops it when tb ends.
// It fails the test when the binary is missing: the tests need a real server.
func Start(tb testing.TB, directives ...string) *Server {
	tb.Helper()
	bin := Binary()
	if _, err := exec.LookPath(bin); err != nil {
		tb.Fatalf("valkeytest: %s not found on PATH (install valkey-server; see README): %v", bin, err)
	}
	s := &Server{Bin: bin, Dir: tb.TempDir()}
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		s.Port = FreePort(tb)
		s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port))
		if lastErr = s.start(directives); lastErr == nil {
			tb.Cleanup(s.Stop)
			return s
		}
	}
	tb.Fatalf("valkeytest: %s did not start: %v", bin, lastErr)
	return nil
}

func (s *Server) start(directives []string) error {
	conf := []string{
		"port " + strconv.Itoa(s.Port),
		"bind 127.0.0.1",
		"save \"\"",
		"appendonly no",
		"dir " + s.Dir,
		"logfile " + filepath.Join(s.Dir, "server.log"),
		"enable-debug-command yes",
	}
	conf = append(conf, directives...)
	path := filepath.Join(s.Dir, "server.conf")
	if err := os.WriteFile(path, []byte(strings.Join(conf, "\n")+"\n"), 0o600); err != nil {
		return err
	}
	s.args = []string{path}
	s.cmd = exec.Command(s.Bin, path)
	if err := s.cmd.Start(); err != nil {
		return err
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if ping(s.Addr) == nil {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	log, _ := os.ReadFile(filepath.Join(s.Dir, "server.log"))
	s.Stop()
	return fmt.Errorf("no PING reply on %s; log:\n%s", s.Addr, log)
}

// ping sends an inline PING and waits for any reply (+PONG, or -NOAUTH when
// a password is set: either way the server is up).
func ping(addr string) error {
	c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if strings.HasPrefix(line, "-LOADING") {
		return fmt.Errorf("loading")
	}
	return nil
}

// Stop kills the server and waits for it to exit. It is safe to call twice.
func (s *Server) Stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	s.cmd = nil
}

// Restart stops the server and starts it again on the same port, with the
// same configuration (its data is gone: persistence is off).
func (s *Server) Restart(tb testing.TB) {
	tb.Helper()
	s.Stop()
	s.cmd = exec.Command(s.Bin, s.args...)
	if err := s.cmd.Start(); err != nil {
		tb.Fatalf("valkeytest: restart: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if ping(s.Addr) == nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	tb.Fatalf("valkeytest: %s did not come back on %s", s.Bin, s.Addr)
}

// Relaunch starts a stopped server again on its port, with its
// configuration, for callers without a testing.TB (cmd/chaos); a cluster
// node comes back with its nodes.conf.
func (s *Server) Relaunch() error {
	s.Stop()
	s.cmd = exec.Command(s.Bin, s.args...)
	if err := s.cmd.Start(); err != nil {
		return err
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if ping(s.Addr) == nil {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("valkeytest: %s did not come back on %s", s.Bin, s.Addr)
}

// Process returns the running process (to pause it with SIGSTOP in fault tests).
func (s *Server) Process() *os.Process {
	if s.cmd == nil {
		return nil
	}
	return s.cmd.Process
}
