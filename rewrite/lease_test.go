package rewrite

import (
	"strings"
	"testing"
	"time"
)

func TestLeaseOver(t *testing.T) {
	now := time.UnixMilli(1_000_000_000)
	max := 30 * time.Second
	for _, tc := range []struct {
		cmd  string
		over bool
	}{
		{"PEXPIRE k 30000", false},
		{"PEXPIRE k 30001", true},
		{"PEXPIRE k 30001 GT", true},
		{"EXPIRE k 30", false},
		{"EXPIRE k 31", true},
		{"EXPIRE k 0", false},                 // deletes the lock
		{"PEXPIRE k -5", false},               // deletes the lock
		{"PEXPIRE k abc", false},              // Valkey's error
		{"EXPIRE k 99999999999999999", false}, // Valkey's error (overflow)
		{"PEXPIREAT k 1000030000", false},
		{"PEXPIREAT k 1000030001", true},
		{"EXPIREAT k 1000031", true},
		{"PERSIST k", true},
		{"GETEX k PX 1000", false},
		{"GETEX k EX 31", true},
		{"GETEX k PERSIST", true},
		{"GETEX k EXAT 1000020", false},
		{"SET k v XX PX 1000", false},
		{"SET k v XX", true},
		{"SET k v KEEPTTL", false},
		{"SET k px PX 30001", true}, // the value is not an option
		{"SET k v GET EX 10", false},
		{"SET k v PXAT 1000040000", true},
	} {
		args := [][]byte{}
		for _, a := range strings.Fields(tc.cmd) {
			args = append(args, []byte(a))
		}
		if got := leaseOver(strings.ToUpper(string(args[0])), args, max, now); got != tc.over {
			t.Errorf("%s: over %v, want %v", tc.cmd, got, tc.over)
		}
	}
}
