// Command lockproxy runs the proxy: a RESP server in front of Valkey that
// makes distributed-lock release safe.
//
//	lockproxy --config FILE [--listen ADDR] [--upstream ADDR]
//	lockproxy check-config FILE
//	lockproxy version
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"syscall"

	"github.com/lockproxy/lockproxy/policy"
	"github.com/lockproxy/lockproxy/proxy"
)

// version is set at build time with -ldflags "-X main.version=..."; otherwise
// the module version or VCS revision is reported.
var version = ""

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "version":
			fmt.Fprintln(stdout, "lockproxy", versionString())
			return 0
		case "check-config":
			if len(args) != 2 {
				fmt.Fprintln(stderr, "usage: lockproxy check-config FILE")
				return 2
			}
			return checkConfig(args[1], stdout, stderr)
		case "lint":
			return lint(args[1:], os.Stdin, stdout, stderr)
		}
	}
	fs := flag.NewFlagSet("lockproxy", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", "", "configuration file (YAML); see config.example.yaml")
	listen := fs.String("listen", "", "address to accept clients on, host:port (overrides the file)")
	upstream := fs.String("upstream", "", "Valkey address, host:port (overrides the file)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile (go tool pprof) to this file until lockproxy exits")
	memProfile := fs.String("memprofile", "", "write an allocation profile (go tool pprof -sample_index=alloc_space) to this file when lockproxy exits")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: lockproxy --config FILE [--listen ADDR] [--upstream ADDR]\n       lockproxy check-config FILE\n       lockproxy version")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(stderr, "cpuprofile:", err)
			return 1
		}
		defer f.Close()
		defer pprof.StopCPUProfile()
	}
	if *memProfile != "" {
		f, err := os.Create(*memProfile)
		if err != nil {
			fmt.Fprintln(stderr, "memprofile:", err)
			return 1
		}
		defer func() {
			if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
				fmt.Fprintln(stderr, "memprofile:", err)
			}
			f.Close()
		}()
	}
	cfg := policy.Default()
	if *configPath != "" {
		var err error
		if cfg, err = policy.Load(*configPath); err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
	}
	// The flags override the file, at start and on every reload.
	override := func(c *policy.Config) {
		if *listen != "" {
			c.Listen = *listen
		}
		if *upstream != "" {
			c.Upstream.Addr = *upstream
		}
	}
	override(cfg)
	if err := serve(cfg, *configPath, override, stderr); err != nil {
		fmt.Fprintln(stderr, "lockproxy:", err)
		return 1
	}
	return 0
}

func checkConfig(path string, stdout, stderr io.Writer) int {
	cfg, err := policy.Load(path)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	if rules, err := policy.NewRules(cfg.Locks); err == nil {
		for _, n := range rules.Notes() {
			fmt.Fprintf(stdout, "%s: note: %s\n", path, n)
		}
	}
	fmt.Fprintf(stdout, "%s: ok\n", path)
	return 0
}

func serve(cfg *policy.Config, configPath string, override func(*policy.Config), stderr io.Writer) error {
	log, level := newLogger(cfg.Log, stderr)
	if cfg.GOMAXPROCS > 0 {
		runtime.GOMAXPROCS(cfg.GOMAXPROCS)
	}
	p, err := proxy.New(proxy.Options{
		Config: *cfg, Logger: log, LogLevel: level, Version: versionString(),
		ConfigPath: configPath, ConfigOverride: override,
	})
	if err != nil {
		return err
	}
	l, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return err
	}
	if cfg.TLS.Enabled() {
		tc, err := proxy.ListenerTLS(cfg.TLS)
		if err != nil {
			l.Close()
			return err
		}
		l = tls.NewListener(l, tc)
	}
	log.Info("lockproxy listening", "listen", l.Addr().String(), "upstream", cfg.Upstream.Addr,
		"version", versionString(), "gomaxprocs", runtime.GOMAXPROCS(0), "lock_rules", len(cfg.Locks))

	stopMetrics, err := startMetrics(cfg.Metrics.Listen, p, log)
	if err != nil {
		l.Close()
		p.Close()
		return err
	}
	defer stopMetrics()
	defer reloadOnHUP(p, log)()

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sigs)
	served := make(chan error, 1)
	go func() { served <- p.Serve(l) }()
	select {
	case err := <-served:
		p.Close()
		return err
	case sig := <-sigs:
		log.Info("shutting down: no new clients; finishing replies in flight", "signal", sig.String(), "deadline", cfg.ShutdownTimeout.D())
		ctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout.D())
		defer cancel()
		err := p.Shutdown(ctx)
		<-served
		if errors.Is(err, context.DeadlineExceeded) {
			log.Warn("shutdown deadline passed; closed the remaining clients")
			return nil
		}
		return err
	}
}

// newLogger also returns its level, which a reload may change.
func newLogger(c policy.LogConfig, w io.Writer) (*slog.Logger, *slog.LevelVar) {
	var level slog.Level
	_ = level.UnmarshalText([]byte(c.Level))
	lv := new(slog.LevelVar)
	lv.Set(level)
	ho := &slog.HandlerOptions{Level: lv}
	if c.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, ho)), lv
	}
	return slog.New(slog.NewTextHandler(w, ho)), lv
}

func versionString() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			return bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				return "dev-" + s.Value[:12]
			}
		}
	}
	return "dev"
}
