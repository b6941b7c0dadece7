package config

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
)

// ConfigError is one problem in a configuration file. Line and Col are
// 1-based; 0 means unknown (a file that cannot be read, or a Config built in
// code and checked with [Config.Validate]).
type ConfigError struct {
	File string
	Line int
	// Col is set only where a line can hold several values (inside a flow
	// collection such as `log: {level: x, format: y}`), where the line alone
	// does not say which value is meant.
	Col int
	Msg string
}

// Error formats the error as FILE:LINE: reason (FILE:LINE:COL: reason when
// the column is set), the form editors and compilers use.
func (e *ConfigError) Error() string {
	switch {
	case e.Line == 0 && e.File == "":
		return e.Msg
	case e.Line == 0:
		return e.File + ": " + e.Msg
	case e.Col > 0:
		return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Msg)
	default:
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
}

// joinErrors orders errors as they appear in the file and joins them, so a
// reader fixes them top to bottom. errors.As finds the first one; to get all
// of them, unwrap with interface{ Unwrap() []error } or use [ConfigErrors].
func joinErrors(errs []*ConfigError) error {
	if len(errs) == 0 {
		return nil
	}
	slices.SortStableFunc(errs, func(a, b *ConfigError) int {
		return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Col, b.Col))
	})
	list := make([]error, len(errs))
	for i, e := range errs {
		list[i] = e
	}
	return errors.Join(list...)
}

// ConfigErrors returns every *ConfigError inside err (as returned by [Load],
// [Parse] or [Config.Validate]), in order.
func ConfigErrors(err error) []*ConfigError {
	var out []*ConfigError
	var walk func(error)
	walk = func(err error) {
		if ce, ok := err.(*ConfigError); ok {
			out = append(out, ce)
			return
		}
		if m, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range m.Unwrap() {
				walk(e)
			}
		} else if e := errors.Unwrap(err); e != nil {
			walk(e)
		}
	}
	if err != nil {
		walk(err)
	}
	return out
}
