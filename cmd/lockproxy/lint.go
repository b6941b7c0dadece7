package main

import (
	"fmt"
	"io"
)

// lint runs the script analysis offline: lockproxy lint FILE.lua... (- for
// stdin). (Placeholder: the script-analysis issue fills it in.)
func lint(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "lockproxy lint: not implemented yet")
	return 2
}
