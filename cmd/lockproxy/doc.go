// Command lockproxy runs the proxy: a RESP server in front of Valkey that
// makes distributed-lock release safe.
//
//	lockproxy --config FILE [--listen ADDR] [--upstream ADDR]
//	lockproxy check-config FILE
//	lockproxy check-upstream FILE
//	lockproxy lint FILE.lua...
//	lockproxy version
//
// It owns the process: the command line and its subcommands, logging,
// signals (SIGHUP reloads, SIGTERM drains within shutdown_timeout), the
// metrics listener and systemd's readiness notice. It must not decide
// anything about commands or locks: that is package proxy's (serving)
// and config's (the configuration it loads and checks).
package main
