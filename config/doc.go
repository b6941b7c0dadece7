// Package config holds lockproxy's configuration file and the process
// settings it gives: where the proxy listens (clients, metrics), the
// upstream (an address, Sentinel or a cluster; its login, TLS, pools,
// timeouts), the listener's TLS, the limits, the event loops, the admin
// logins, the log and audit file, and the lock rules as written.
//
// [Load] and [Parse] decode the YAML with yaml.v3 (unknown keys refused),
// and every problem — an unknown key, a wrong type, a bad value, a missing
// required value — is reported as a [*ConfigError] naming the file, line
// and setting, all problems in a file together rather than one per run.
// The same struct configures the proxy (proxy.Options embeds it), and
// check-config and LOCKPROXY RELOAD read it the same way.
//
// It must not decide lock policy: what a lock rule's settings mean, which
// words they accept, the checks of a set of rules and the rules themselves
// are package policy's. Config turns the locks list into policy's
// LockRules ([LockRule.Policy]), places policy's problems at their lines,
// and builds the rules by calling policy ([Config.Rules]). Nor must it
// act on the settings: no networking, no goroutines; it reads only the
// files the configuration names (TLS files, the password file), and builds
// the TLS configurations they describe (UpstreamConfig.TLSConfig,
// ListenerTLS.TLSConfig): which one is in use, and its reload, are the
// proxy's.
package config
