// Package policy holds lockproxy's configuration and the per-key decisions
// that follow from it.
//
// It has three parts, all pure (no networking, no goroutines):
//
//   - Config: the YAML configuration file. [Load] and [Parse] decode it with
//     yaml.v3 (unknown keys refused), and every problem — an unknown key, a
//     wrong type, a bad value, a missing required value — is reported as a
//     [*ConfigError] naming the file, line and setting, all problems in a
//     file together rather than one per run. The same struct configures the
//     proxy (proxy.Options embeds it).
//   - Pattern: a compiled Valkey glob. [Pattern.Match] answers exactly as
//     Valkey's KEYS/SCAN MATCH would (util.c stringmatchlen), because the proxy
//     must agree with the server about which keys a client's pattern covers and
//     an operator's mental model of "*:lock" comes from Valkey.
//   - Rules: the ordered lock rules. [Rules.Match] runs for every key of every
//     command, so it never allocates and costs almost nothing when no rule is
//     configured. A rule's fence templates ({key}, {base}) and, in front of a
//     cluster, the check that a lock's keys stay in its hash slot belong to
//     the rules too.
//
// It must not act on what it decides: which command touches which key, and
// what happens to a command on a lock, are packages keyspec's and rewrite's.
package policy
