// Command lockproxy runs the proxy: a RESP server in front of Valkey that
// makes distributed-lock release safe.
//
//	lockproxy --config FILE [--listen ADDR] [--upstream ADDR]
//	lockproxy check-config FILE
//	lockproxy check-upstream FILE
//	lockproxy lint FILE.lua...
//	lockproxy version
//
// With no arguments it prints the usage and exits 2. It owns the process:
// the command line and its subcommands, logging, binding the client and
// metrics ports (a clash names the setting), signals (SIGHUP reloads;
// SIGTERM turns /readyz to 503 and keeps accepting for drain_delay, then
// shuts down within shutdown_timeout), the metrics listener and systemd's
// readiness notice. It must not decide
// anything about commands or locks: that is package proxy's (serving)
// and config's (the configuration it loads and checks).
package main
