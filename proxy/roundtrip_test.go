package proxy

import (
	"testing"

	"github.com/lockproxy/lockproxy/commands"
	"github.com/lockproxy/lockproxy/upstream"
)

// A batch of replies is timed from each command's queueing, under its
// family; a command not timed (Sent 0) is not counted.
func TestRoundTripsRecord(t *testing.T) {
	var o ops
	now := upstream.MonoNow()
	// Sent long enough ago that the clock read in record is later still.
	o.recordRoundTrips([]upstream.Pend{
		{Fam: uint8(commands.FamForward), Sent: now - 2e6}, // 2 ms ago
		{Fam: uint8(commands.FamForward), Sent: now - 40e9},
		{Fam: uint8(commands.FamLock), Sent: now - 7e6},
		{Fam: uint8(commands.FamLock), Sent: 0}, // not timed
	})
	if f := o.roundTrip.Snapshot(int(commands.FamForward)); f.Count != 2 || f.Min < 0.002 || f.Max < 40 {
		t.Errorf("forward: %+v", f)
	}
	if l := o.roundTrip.Snapshot(int(commands.FamLock)); l.Count != 1 || l.Sum < 0.007 {
		t.Errorf("lock: %+v", l)
	}
	if a := o.roundTrip.Snapshot(int(commands.FamAdmin)); a.Count != 0 {
		t.Errorf("admin: %+v", a)
	}
}
