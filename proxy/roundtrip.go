package proxy

import (
	"github.com/lockproxy/lockproxy/commands"
	"github.com/lockproxy/lockproxy/telemetry"
	"github.com/lockproxy/lockproxy/upstream"
)

// Each command family has its own round-trip histogram (telemetry.RoundTrips,
// labelled by family number): the families must fit.
var _ [telemetry.MaxFamilies - commands.NumFamilies]struct{}

// recordRoundTrips adds the round trips of replies just read (upstream.Host's
// RoundTrip): from when each command was queued on the connection to now, one
// clock read for the batch, counted on the reader's stack and added once.
func (o *ops) recordRoundTrips(ps []upstream.Pend) {
	if len(ps) == 0 {
		return
	}
	now := upstream.MonoNow()
	var b telemetry.RoundTripBatch
	for i := range ps {
		if ps[i].Sent != 0 {
			b.Add(int(ps[i].Fam), now-ps[i].Sent)
		}
	}
	o.roundTrip.Record(&b)
}
