package rewrite

import (
	"github.com/lockproxy/lockproxy/keyspec"
)

// script decides EVAL, EVALSHA, EVAL_RO, EVALSHA_RO, FCALL, FCALL_RO, and
// learns script bodies from SCRIPT LOAD and FUNCTION LOAD passing through.
// (Placeholder: the script-analysis issue fills it in; scripts are
// forwarded unchanged until then.)
func (d *Decider) script(args [][]byte, keys []keyspec.Key, s Session) Plan {
	return Plan{}
}

func isScriptAdmin(name []byte) bool { return equalFold(name, "script") || equalFold(name, "function") }
