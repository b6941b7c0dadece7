//go:build !race

package keyspec

const raceEnabled = false
