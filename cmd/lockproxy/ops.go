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

// listenMetrics binds metrics.listen; an empty addr binds nothing (nil).
func listenMetrics(addr string) (net.Listener, error) {
	if addr == "" {
		return nil, nil
	}
	return net.Listen("tcp", addr)
}

// serveMetrics serves /metrics, /livez, /healthz and /readyz on l (bound
// to metrics.listen) until the returned stop is called. A nil l serves
// nothing.
func serveMetrics(l net.Listener, p *proxy.Proxy, log *slog.Logger) (stop func()) {
	if l == nil {
		return func() {}
	}
	srv := &http.Server{Handler: p.MetricsHandler(), ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics endpoint stopped", "listen", l.Addr().String(), "err", err)
		}
	}()
	log.Info("metrics endpoint listening", "listen", l.Addr().String(), "paths", "/metrics /livez /healthz /readyz")
	return func() {
		// Within shutdownGrace: a probe still waiting on Valkey is cut.
		ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace/4)
		defer cancel()
		if srv.Shutdown(ctx) != nil {
			srv.Close()
		}
		<-done
	}
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
