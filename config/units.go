package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Size is a byte count written Valkey-style in the configuration: a whole
// number with an optional unit, as in valkey.conf.
type Size int64

// Binary units, as Valkey's "kb", "mb", "gb".
const (
	KB Size = 1 << 10
	MB Size = 1 << 20
	GB Size = 1 << 30
)

// sizeUnits are Valkey's memtoull units (case-insensitive). Note that, as in
// valkey.conf, "k", "m" and "g" are powers of 1000 and "kb", "mb", "gb" powers
// of 1024.
var sizeUnits = []struct {
	unit string
	mul  int64
}{
	{"", 1}, {"b", 1},
	{"k", 1000}, {"kb", 1 << 10},
	{"m", 1000 * 1000}, {"mb", 1 << 20},
	{"g", 1000 * 1000 * 1000}, {"gb", 1 << 30},
}

// ParseSize parses a size the way Valkey parses memory sizes in its config:
// digits, then optionally b, k, kb, m, mb, g or gb (any case): "512mb",
// "1gb", "64kb", "1048576".
func ParseSize(s string) (Size, error) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, fmt.Errorf("%s is not a size; write a whole number of bytes with an optional unit b, k, kb, m, mb, g, gb (e.g. 512mb)", strconv.Quote(s))
	}
	unit := strings.ToLower(s[i:])
	for _, u := range sizeUnits {
		if u.unit != unit {
			continue
		}
		n, err := strconv.ParseInt(s[:i], 10, 64)
		if err != nil || n > math.MaxInt64/u.mul {
			return 0, fmt.Errorf("%s is too large", strconv.Quote(s))
		}
		return Size(n * u.mul), nil
	}
	return 0, fmt.Errorf("%s has an unknown unit %s; use b, k, kb, m, mb, g or gb (kb/mb/gb are 1024-based, k/m/g 1000-based, as in valkey.conf)", strconv.Quote(s), strconv.Quote(s[i:]))
}

// String writes the size with the largest 1024-based unit that divides it
// exactly, so that ParseSize(s.String()) == s.
func (s Size) String() string {
	switch {
	case s != 0 && s%GB == 0:
		return strconv.FormatInt(int64(s/GB), 10) + "gb"
	case s != 0 && s%MB == 0:
		return strconv.FormatInt(int64(s/MB), 10) + "mb"
	case s != 0 && s%KB == 0:
		return strconv.FormatInt(int64(s/KB), 10) + "kb"
	}
	return strconv.FormatInt(int64(s), 10)
}

// MarshalYAML writes the size as Load reads it back ("512mb"), so a marshalled
// Config (for display, see [Config.Redacted]) is itself a valid config.
func (s Size) MarshalYAML() (any, error) { return s.String(), nil }

// UnmarshalYAML reads a size as ParseSize does.
func (s *Size) UnmarshalYAML(n *yaml.Node) error {
	return decodeScalar(n, s, "a size such as 512mb", ParseSize)
}

// Duration is a time.Duration written in Go syntax in the configuration
// ("10s", "100ms", "1m30s"); see parseDuration for what is refused.
type Duration time.Duration

// D is the duration as the time package uses it.
func (d Duration) D() time.Duration { return time.Duration(d) }

// String writes the duration as Go does ("1m30s"), which parseDuration reads back.
func (d Duration) String() string { return time.Duration(d).String() }

// UnmarshalYAML reads a duration as parseDuration does.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	return decodeScalar(n, d, "a duration such as 10s", func(s string) (Duration, error) {
		v, err := parseDuration(s)
		return Duration(v), err
	})
}

// MarshalYAML writes the duration as UnmarshalYAML reads it back.
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }

// decodeScalar is an UnmarshalYAML for a value written as one scalar: parse
// reads it into dst, want says what a value of another shape should be.
func decodeScalar[T any](n *yaml.Node, dst *T, want string, parse func(string) (T, error)) error {
	if n.Kind != yaml.ScalarNode {
		return valueError(n, "expected %s, got %s", want, describe(n))
	}
	v, err := parse(n.Value)
	if err != nil {
		return valueError(n, "%v", err)
	}
	*dst = v
	return nil
}

// valueError is how an Unmarshaler reports a bad value: as one of the
// decoding's type errors, so that the others are still reported, with the
// line and column the decoder uses to name the setting (decode.go).
func valueError(n *yaml.Node, format string, args ...any) error {
	return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d:%d: %s", n.Line, n.Column, fmt.Sprintf(format, args...))}}
}

// parseDuration reads a duration in Go syntax ("10s", "100ms", "1m30s").
// A bare 0 is accepted because it is unambiguous; any other bare number is
// refused, since readers of valkey.conf would take it as seconds and readers
// of Go code as nanoseconds.
func parseDuration(s string) (time.Duration, error) {
	if s == "0" {
		return 0, nil
	}
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		return 0, fmt.Errorf("%s has no unit; write e.g. %ss or %sms", s, s, s)
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%s is not a duration; write e.g. 10s, 100ms or 1m30s", strconv.Quote(s))
	}
	if d < 0 {
		return 0, fmt.Errorf("%s is negative", s)
	}
	return d, nil
}
