//go:build race

package keyspec

// raceEnabled: the race detector instruments memory and changes what
// testing.AllocsPerRun counts.
const raceEnabled = true
