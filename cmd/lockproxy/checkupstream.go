package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/lockproxy/lockproxy/config"
	"github.com/lockproxy/lockproxy/proxy"
	"github.com/redis/go-redis/v9"
)

// checkUpstream is `lockproxy check-upstream FILE`: it connects to Valkey
// as FILE says and prints one line per check (proxy.CheckUpstream), then
// FILE: ok, or FILE: N problem(s) and exit status 1. It ends within
// dial_timeout and a second, whatever Valkey does; its findings are its
// only output (the proxy's log and go-redis's are silenced).
func checkUpstream(path string, stdout, stderr io.Writer) int {
	start := time.Now()
	cfg, err := config.Load(path)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	cfg.Listen = "127.0.0.1:0" // the checks listen on loopback, whatever the file says
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	redis.SetLogger(redisLogger{log})
	p, err := proxy.New(proxy.Options{Config: *cfg, Logger: log, Version: versionString()})
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", path, err)
		return 1
	}
	defer p.Close()
	bad := 0
	ctx, cancel := context.WithDeadline(context.Background(), start.Add(cfg.Upstream.DialTimeout.D()+time.Second))
	defer cancel()
	for _, c := range p.CheckUpstream(ctx) {
		word := "ok"
		if !c.OK {
			word = "FAIL"
			bad++
		}
		line := fmt.Sprintf("%s: %s", word, c.What)
		if c.Detail != "" {
			line += ": " + c.Detail
		}
		fmt.Fprintln(stdout, line)
	}
	if bad > 0 {
		fmt.Fprintf(stdout, "%s: %d problem(s) with the upstream\n", path, bad)
		return 1
	}
	fmt.Fprintf(stdout, "%s: ok\n", path)
	return 0
}
