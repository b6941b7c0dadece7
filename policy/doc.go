// Package policy holds lockproxy's lock policy: which keys are locks and
// what the proxy decides for each.
//
// It has three parts, all pure (no networking, no goroutines, no files):
//
//   - Pattern: a compiled Valkey glob. [Pattern.Match] answers exactly as
//     Valkey's KEYS/SCAN MATCH would (util.c stringmatchlen), because the proxy
//     must agree with the server about which keys a client's pattern covers and
//     an operator's mental model of "*:lock" comes from Valkey.
//   - Rules: the ordered lock rules, compiled by [NewRules] from [LockRule]s.
//     [Rules.Match] runs for every key of every command, so it never
//     allocates and costs almost nothing when no rule is configured. A rule's
//     fence templates ({key}, {base}) belong to the rules too.
//   - The checks of a set of rules ([Check]): patterns, the words of each
//     mode, fence templates and, in front of a cluster, that a lock's keys
//     stay in its hash slot. Each problem is a [*RuleError] naming the
//     setting as the configuration file names it (locks[2].fence.counter).
//
// It must not read the configuration file or know its syntax: package config
// decodes the YAML, places a RuleError at its line and builds the rules by
// calling NewRules; policy does not import config. Nor must it act on what
// it decides: which command touches which key, and what happens to a
// command on a lock, are packages keyspec's and rewrite's.
package policy
