package main

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/lockproxy/lockproxy/proxy"
)

// startMetrics serves /metrics, /healthz and /readyz on addr (metrics.listen)
// until the returned stop is called. An empty addr serves nothing.
func startMetrics(addr string, p *proxy.Proxy, log *slog.Logger) (stop func(), err error) {
	if addr == "" {
		return func() {}, nil
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: p.MetricsHandler(), ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics endpoint stopped", "listen", addr, "err", err)
		}
	}()
	log.Info("metrics endpoint listening", "listen", l.Addr().String(), "paths", "/metrics /healthz /readyz")
	return func() {
		// Within shutdownGrace: a probe still waiting on Valkey is cut.
		ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace/4)
		defer cancel()
		if srv.Shutdown(ctx) != nil {
			srv.Close()
		}
		<-done
	}, nil
}

// reloadOnHUP reloads the configuration on every SIGHUP until stop is
// called. Proxy.Reload logs the outcome; a failed reload keeps the running
// configuration.
func reloadOnHUP(p *proxy.Proxy, log *slog.Logger) (stop func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	quit := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-hup:
				log.Info("SIGHUP: reloading the configuration")
				sdNotify("RELOADING=1")
				_, _ = p.Reload() // logs what it did, or why it kept the running configuration
				sdNotify("READY=1")
			case <-quit:
				return
			}
		}
	}()
	return func() {
		signal.Stop(hup)
		close(quit)
		select {
		case <-done:
		case <-time.After(shutdownGrace / 4): // a reload waiting on Valkey ends with the process
		}
	}
}
