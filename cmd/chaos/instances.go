package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/lockproxy/lockproxy/proxy"
)

// The several-instance run (-instances 2 or more): each lockproxy instance
// is a process of its own (this binary, re-executed with -serve-proxy), so
// that killing one with SIGKILL is what kill -9 does to a deployed proxy:
// no drain, no goodbye to its clients, whatever it kept in memory gone.

// sharedSession is the owner scope of the several-instance run: a worker's
// connections to every instance share its client name, so its locks are
// its own whichever instance a command goes through.
const sharedSession = "client_name"

// proxyProc is one lockproxy instance process on a fixed address.
type proxyProc struct {
	self, addr, upstream string
	logw                 io.Writer
	cmd                  *exec.Cmd
	exited               chan struct{}
}

// start runs the instance and waits until it answers on its address.
func (pp *proxyProc) start() error {
	pp.cmd = exec.Command(pp.self, "-serve-proxy", pp.addr, "-upstream", pp.upstream, "-session", sharedSession)
	pp.cmd.Stderr = pp.logw
	if err := pp.cmd.Start(); err != nil {
		return err
	}
	pp.exited = make(chan struct{})
	go func(cmd *exec.Cmd, exited chan struct{}) { _ = cmd.Wait(); close(exited) }(pp.cmd, pp.exited)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		select {
		case <-pp.exited:
			return fmt.Errorf("lockproxy instance on %s exited at start", pp.addr)
		default:
		}
		if answers(pp.addr) {
			return nil
		}
	}
	return fmt.Errorf("lockproxy instance on %s did not answer", pp.addr)
}

// answers reports whether something on addr answers a PING with a reply
// line (+PONG, or an error while Valkey is away: either way it listens).
func answers(addr string) bool {
	nc, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		return false
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := nc.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
		return false
	}
	_, err = bufio.NewReader(nc).ReadString('\n')
	return err == nil
}

// kill stops the instance with SIGKILL.
func (pp *proxyProc) kill() {
	if pp.cmd == nil {
		return
	}
	_ = pp.cmd.Process.Kill()
	<-pp.exited
	pp.cmd = nil
}

// stop ends the instance gracefully at the end of a run.
func (pp *proxyProc) stop() {
	if pp.cmd == nil {
		return
	}
	_ = pp.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-pp.exited:
	case <-time.After(5 * time.Second):
		_ = pp.cmd.Process.Kill()
		<-pp.exited
	}
	pp.cmd = nil
}

// serveProxy is the body of an instance process: the run's rule with
// session, on listen, until SIGTERM (a graceful stop) or SIGKILL.
func serveProxy(listen, upstream, session string) error {
	opts, err := proxyOptions(upstream, nil, nil, session)
	if err != nil {
		return err
	}
	p, err := proxy.New(opts)
	if err != nil {
		return err
	}
	l, err := listenRetry(listen)
	if err != nil {
		p.Close()
		return err
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-sig
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = p.Shutdown(ctx)
	}()
	return p.Serve(l)
}
