package keyspec

// Two commands carry the "blocking" flag yet block only when asked to:
// XREAD and XREADGROUP, with a BLOCK option before STREAMS; without it they
// are plain reads. The flag cannot say so. This is the one place that does,
// for the proxy's routing and for the fence alike.
var blockOption = map[string]bool{"xread": true, "xreadgroup": true}

// BlocksOnlyWithOption reports whether the command named name (lower case)
// blocks only with a BLOCK option (HasBlockOption): XREAD, XREADGROUP.
func BlocksOnlyWithOption(name string) bool { return blockOption[name] }

// HasBlockOption reports whether an XREAD or XREADGROUP asks to block: a
// BLOCK option before STREAMS (after STREAMS every argument is a key or an
// id). args[0] is the command name.
func HasBlockOption(args [][]byte) bool {
	for _, a := range args[1:] {
		if cstrEqualFold(a, "streams") {
			return false
		}
		if cstrEqualFold(a, "block") {
			return true
		}
	}
	return false
}

// Blocks reports whether the concrete command args may block: the
// "blocking" flag, and for XREAD and XREADGROUP a BLOCK option.
func (c *Command) Blocks(args [][]byte) bool {
	if !c.Flags.Has(Blocking) {
		return false
	}
	if blockOption[c.Name] {
		return HasBlockOption(args)
	}
	return true
}
