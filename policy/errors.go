package policy

import (
	"errors"
	"fmt"
)

// RuleError is one problem with a lock rule: the setting, named as the
// configuration file names it ("locks[2].fence.counter"), and what is
// wrong with it. Package config places it at the setting's line.
type RuleError struct {
	Path string
	Msg  string
}

// Error formats the error as SETTING: reason.
func (e *RuleError) Error() string { return e.Path + ": " + e.Msg }

// checker collects the problems of a set of lock rules, in the order they
// are found (rule by rule, setting by setting).
type checker struct {
	errs []*RuleError
}

func (c *checker) errf(path, format string, args ...any) {
	c.errs = append(c.errs, &RuleError{Path: path, Msg: fmt.Sprintf(format, args...)})
}

// err joins the problems found, in order; nil when there are none. To get
// them one by one, unwrap with interface{ Unwrap() []error }.
func (c *checker) err() error {
	if len(c.errs) == 0 {
		return nil
	}
	list := make([]error, len(c.errs))
	for i, e := range c.errs {
		list[i] = e
	}
	return errors.Join(list...)
}
