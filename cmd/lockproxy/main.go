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
	"strings"
	"syscall"
	"time"

	"github.com/lockproxy/lockproxy/config"
	"github.com/lockproxy/lockproxy/proxy"
)

// version is set at build time with -ldflags "-X main.version=..."; otherwise
// the module version or VCS revision is reported.
var version = ""

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `usage:
  lockproxy --config FILE [--listen ADDR] [--upstream ADDR]   run the proxy (flags override the file)
  lockproxy check-config FILE      validate FILE (and its TLS files); exit 1 on an error
  lockproxy check-upstream FILE    connect to Valkey as FILE says; report what is missing
  lockproxy lint [-v] FILE.lua...  classify lock scripts offline (- reads standard input)
  lockproxy version                print the version (also --version)
  lockproxy help                   this text

flags of the proxy:`

// subcommands are the words run accepts first, each with its handler.
var subcommands = map[string]func(args []string, stdout, stderr io.Writer) int{
	"version": func(args []string, stdout, stderr io.Writer) int {
		if len(args) > 0 {
			fmt.Fprintf(stderr, "lockproxy version: unexpected argument %q\n", args[0])
			return 2
		}
		fmt.Fprintln(stdout, "lockproxy", versionString())
		return 0
	},
	"check-config": func(args []string, stdout, stderr io.Writer) int {
		if len(args) != 1 {
			fmt.Fprintln(stderr, "usage: lockproxy check-config FILE")
			return 2
		}
		return checkConfig(args[0], stdout, stderr)
	},
	"check-upstream": func(args []string, stdout, stderr io.Writer) int {
		if len(args) != 1 {
			fmt.Fprintln(stderr, "usage: lockproxy check-upstream FILE")
			return 2
		}
		return checkUpstream(args[0], stdout, stderr)
	},
	"lint": func(args []string, stdout, stderr io.Writer) int { return lint(args, os.Stdin, stdout, stderr) },
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		// A newcomer typing lockproxy to see what it does gets the usage,
		// not a proxy with the defaults waiting in the foreground.
		fmt.Fprintln(stderr, usage)
		newFlags(stderr).PrintDefaults()
		fmt.Fprintln(stderr, "\nlockproxy: no arguments: to run the proxy, give --config FILE (or --listen and --upstream)")
		return 2
	}
	if !strings.HasPrefix(args[0], "-") {
		if args[0] == "help" {
			fmt.Fprintln(stdout, usage)
			fs := newFlags(stdout)
			fs.PrintDefaults()
			return 0
		}
		if f, ok := subcommands[args[0]]; ok {
			return f(args[1:], stdout, stderr)
		}
		msg := fmt.Sprintf("lockproxy: unknown command %q", args[0])
		if near := nearestCommand(args[0]); near != "" {
			msg += fmt.Sprintf("; did you mean %q?", near)
		}
		fmt.Fprintln(stderr, msg+" (lockproxy help lists them)")
		return 2
	}
	fs := newFlags(stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "lockproxy: unexpected argument %q: the proxy takes only flags (lockproxy help)\n", fs.Arg(0))
		return 2
	}
	if *showVersion {
		fmt.Fprintln(stdout, "lockproxy", versionString())
		return 0
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
	cfg := config.Default()
	if *configPath != "" {
		var err error
		if cfg, err = config.Load(*configPath); err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
	} else {
		fmt.Fprintf(stderr, "lockproxy: WARNING: no --config FILE: running with the built-in defaults (listen %s, upstream %s, no lock rules: a plain pass-through proxy)\n",
			cfg.Listen, cfg.Upstream.Addr)
	}
	// The flags override the file, at start and on every reload.
	override := func(c *config.Config) {
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

// The proxy's flags.
var (
	configPath, listen, upstream, cpuProfile, memProfile *string
	showVersion                                          *bool
)

// upstreamName is what the start-up line names as the upstream.
func upstreamName(cfg *config.Config) string {
	u := cfg.Upstream
	switch {
	case u.Sentinel.Master != "":
		return fmt.Sprintf("Sentinel master %q via %s", u.Sentinel.Master, strings.Join(u.Sentinel.Addrs, ","))
	case len(u.Cluster.Seeds) > 0:
		return "cluster via " + strings.Join(u.Cluster.Seeds, ",")
	}
	return u.Addr
}

func newFlags(w io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("lockproxy", flag.ContinueOnError)
	fs.SetOutput(w)
	configPath = fs.String("config", "", "configuration file (YAML); see config.example.yaml")
	listen = fs.String("listen", "", "address to accept clients on, host:port (overrides the file)")
	upstream = fs.String("upstream", "", "Valkey address, host:port (overrides the file)")
	cpuProfile = fs.String("cpuprofile", "", "write a CPU profile (go tool pprof) to this file until lockproxy exits")
	memProfile = fs.String("memprofile", "", "write an allocation profile (go tool pprof -sample_index=alloc_space) to this file when lockproxy exits")
	showVersion = fs.Bool("version", false, "print the version and exit")
	fs.Usage = func() {
		fmt.Fprintln(w, usage)
		fs.PrintDefaults()
	}
	return fs
}

// nearestCommand is the subcommand a mistyped word was probably meant to
// be; "" when none is close.
func nearestCommand(word string) string {
	best, bestD := "", 3
	for name := range subcommands {
		if d := editDistance(word, name); d < bestD {
			best, bestD = name, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

func checkConfig(path string, stdout, stderr io.Writer) int {
	cfg, err := config.Load(path)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	if pub := cfg.PublishedSecrets(); len(pub) > 0 {
		for _, p := range pub {
			fmt.Fprintf(stderr, "%s: %s\n", path, p)
		}
		return 1
	}
	for _, w := range append(cfg.Warnings(), cfg.CertificateWarnings(time.Now())...) {
		fmt.Fprintf(stdout, "%s: warning: %s\n", path, w)
	}
	if rules, err := cfg.Rules(); err == nil {
		for _, n := range rules.Notes() {
			fmt.Fprintf(stdout, "%s: note: %s\n", path, n)
		}
	}
	fmt.Fprintf(stdout, "%s: ok\n", path)
	return 0
}

func serve(cfg *config.Config, configPath string, override func(*config.Config), stderr io.Writer) error {
	log, level := newLogger(cfg.Log, stderr)
	for _, w := range append(append(cfg.Warnings(), cfg.CertificateWarnings(time.Now())...), cfg.PublishedSecrets()...) {
		log.Warn("configuration: " + w)
	}
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
		p.Close()
		return bindError("listen", cfg.Listen, "(or --listen)", err)
	}
	ml, err := listenMetrics(cfg.Metrics.Listen)
	if err != nil {
		l.Close()
		p.Close()
		return bindError("metrics.listen", cfg.Metrics.Listen, "", err)
	}
	if tc := p.ListenerTLS(); tc != nil {
		l = tls.NewListener(l, tc)
	}
	log.Info("lockproxy listening", "listen", l.Addr().String(), "upstream", upstreamName(cfg),
		"version", versionString(), "gomaxprocs", runtime.GOMAXPROCS(0), "lock_rules", len(cfg.Locks))

	stopMetrics := serveMetrics(ml, p, log)
	defer stopMetrics()
	defer reloadOnHUP(p, log)()

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sigs)
	served := make(chan error, 1)
	go func() { served <- p.Serve(l) }()
	sdNotify("READY=1")
	select {
	case err := <-served:
		p.Close()
		return err
	case sig := <-sigs:
		sdNotify("STOPPING=1")
		delay := cfg.DrainDelay.D()
		if sig == os.Interrupt {
			delay = 0 // Ctrl-C at a terminal: nobody routes clients by /readyz there
		}
		if stopped, err := drain(p, delay, sig, sigs, served, log); stopped {
			p.Close()
			return err
		}
		wait := cfg.ShutdownTimeout.D()
		log.Info("shutting down: no new clients; finishing replies in flight", "signal", sig.String(), "deadline", wait)
		return shutdown(p, served, wait, log)
	}
}

// drain keeps accepting and serving clients for delay while /readyz
// answers 503, so that load balancers stop sending new ones before the
// listener closes. A second signal ends it early. stopped reports that the
// proxy stopped serving by itself meanwhile (err is why).
func drain(p *proxy.Proxy, delay time.Duration, sig os.Signal, sigs <-chan os.Signal, served <-chan error, log *slog.Logger) (stopped bool, err error) {
	if delay <= 0 {
		return false, nil
	}
	p.Drain()
	log.Info("draining: /readyz answers 503; clients are still accepted until drain_delay passes (a second signal ends it)",
		"signal", sig.String(), "drain_delay", delay)
	t := time.NewTimer(delay)
	defer t.Stop()
	select {
	case <-t.C:
	case sig := <-sigs:
		log.Info("draining ended early", "signal", sig.String())
	case err := <-served:
		return true, err
	}
	return false, nil
}

// bindError says which setting names an address that cannot be listened
// on, and what to do.
func bindError(setting, addr, also string, err error) error {
	hint := "check the address"
	if errors.Is(err, syscall.EADDRINUSE) {
		hint = "another process listens there (another lockproxy, or Valkey?): stop it or choose another port"
	} else if errors.Is(err, syscall.EACCES) {
		hint = "a port below 1024 needs privileges: choose a port of 1024 or more"
	}
	if also != "" {
		also = " " + also
	}
	return fmt.Errorf("%s %s cannot be listened on: %v; %s in %s%s", setting, addr, err, hint, setting, also)
}

// shutdown lets the clients' replies in flight arrive for up to wait, then
// closes what is left; it returns within wait plus shutdownGrace whatever
// happens (a closing connection that hangs is left to the process's exit).
func shutdown(p *proxy.Proxy, served <-chan error, wait time.Duration, log *slog.Logger) error {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		err := p.Shutdown(ctx)
		<-served
		done <- err
	}()
	select {
	case err := <-done:
		if errors.Is(err, context.DeadlineExceeded) {
			log.Warn("shutdown deadline passed; closed the remaining clients")
			return nil
		}
		return err
	case <-time.After(wait + shutdownGrace):
		return fmt.Errorf("shutdown did not finish within shutdown_timeout (%s) and %s more; exiting anyway", wait, shutdownGrace)
	}
}

// shutdownGrace is what closing takes past shutdown_timeout at most; the
// metrics endpoint and the reload handler stop within it too.
const shutdownGrace = 500 * time.Millisecond

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
