package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"time"

	"github.com/lockproxy/lockproxy/config"
	"github.com/lockproxy/lockproxy/proxy"
)

// rulesYAML are the world's lock rules, in config.example.yaml's shapes:
// string and Redisson-style hash locks under "*:lock"; fenced resources
// "{o...}:mutex" whose counter is "{base}:fence" and whose fence guards
// every "{base}:*" key. The pattern is narrower than the example's
// "{*}:mutex", whose guards would cover every hash-tagged key (lockproxy's
// own "{lockproxy}:..." keys among them) and hide what lockproxy does on
// those keys when no fence covers them. on_flush: reject, so that FLUSHALL, FLUSHDB and
// SWAPDB, which would drop the held locks, are no change the rules allow.
const rulesYAML = `on_flush: reject
locks:
  - pattern: "*:lock"
    release: rewrite
  - pattern: "{o*}:mutex"
    release: rewrite
    fence:
      counter: "{base}:fence"
      guards: ["{base}:*"]
      check: highest
      mark: lock
      unfenced_writes: reject
`

// lockproxy is the proxy under test, in this process, with its defaults
// and the world's rules, in front of upstream (or a cluster's seeds).
type lockproxy struct {
	addr string
	p    *proxy.Proxy
	done chan error
}

func startProxy(upstream string, seeds []string) (*lockproxy, error) {
	cfg, err := config.Parse("fuzzgrammar.yaml", []byte(rulesYAML))
	if err != nil {
		return nil, err
	}
	u := &cfg.Upstream
	u.Addr = upstream
	if len(seeds) > 0 {
		u.Addr, u.Cluster.Seeds = "", seeds
	}
	// Short waits, so a restarted Valkey is found again quickly.
	u.ReconnectBackoff, u.MaxBackoff = config.Duration(20*time.Millisecond), config.Duration(200*time.Millisecond)
	p, err := proxy.New(proxy.Options{Config: *cfg, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Version: "fuzzgrammar"})
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		p.Close()
		return nil, err
	}
	lp := &lockproxy{addr: l.Addr().String(), p: p, done: make(chan error, 1)}
	go func() { lp.done <- p.Serve(l) }()
	return lp, nil
}

func (lp *lockproxy) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = lp.p.Shutdown(ctx)
	<-lp.done
}

// waitReady waits until a PING through the proxy is answered +PONG.
func waitReady(addr string) error {
	var last string
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		c, err := dialRaw(addr)
		if err != nil {
			last = err.Error()
			continue
		}
		r, err := c.do("PING")
		c.close()
		if err == nil && string(r) == "+PONG\r\n" {
			return nil
		}
		last = fmt.Sprintf("%q %v", r, err)
	}
	return fmt.Errorf("no PONG through %s: %s", addr, last)
}
