package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/lockproxy/lockproxy/scriptcheck"
)

const lintUsage = `usage: lockproxy lint [-v] FILE.lua... (- reads standard input)

Runs lockproxy's script analysis offline. For each script (or each function
of a "#!lua name=..." library) it prints one line per finding,
FILE:LINE: VERDICT: what the call does, then a summary line. The verdict of
each key the script receives: guarded (changed only after comparing its
value or owner field with an argument), acquire (only created), blind
(deleted, expired or overwritten unchecked) or unknown (cannot tell).

Exit status: 2 when a file cannot be read or does not parse, else 1 when
any script is blind for some key, else 0.`

// lint runs the script analysis offline: lockproxy lint FILE.lua... (- for
// stdin).
func lint(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("lockproxy lint", flag.ContinueOnError)
	fs.SetOutput(stderr)
	verbose := fs.Bool("v", false, "also print guarded and acquire calls")
	fs.Usage = func() { fmt.Fprintln(stderr, lintUsage) }
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return 2
	}
	status := 0
	for _, path := range fs.Args() {
		var data []byte
		var err error
		name := path
		if path == "-" {
			name = "<stdin>"
			data, err = io.ReadAll(stdin)
		} else {
			data, err = os.ReadFile(path)
		}
		if err != nil {
			fmt.Fprintf(stderr, "lockproxy lint: %v\n", err)
			status = 2
			continue
		}
		body := string(data)
		var reports []*scriptcheck.Report
		if scriptcheck.IsLibrary(body) {
			lib := scriptcheck.AnalyzeLibrary(body)
			if lib.Err != "" {
				fmt.Fprintf(stdout, "%s:%d: unknown: %s\n", name, lib.ErrLine, lib.Err)
				fmt.Fprintf(stdout, "%s: library %q: unknown (not analysed)\n", name, lib.Name)
				if unparsable(lib.Err) {
					status = 2
				}
				continue
			}
			names := make([]string, 0, len(lib.Functions))
			for n := range lib.Functions {
				names = append(names, n)
			}
			sort.Strings(names)
			if len(names) == 0 {
				fmt.Fprintf(stdout, "%s: library %q registers no function with a literal name\n", name, lib.Name)
			}
			for _, n := range names {
				reports = append(reports, lib.Functions[n])
			}
		} else {
			reports = append(reports, scriptcheck.Analyze(body))
		}
		for _, r := range reports {
			switch {
			case unparsable(r.Err):
				lintReport(stdout, name, r, *verbose)
				status = 2
			case lintReport(stdout, name, r, *verbose) && status == 0:
				status = 1
			}
		}
	}
	return status
}

// unparsable: the analysis gave up because the text is not Lua, which
// Valkey would refuse too (a script it only could not follow is "unknown",
// not an error).
func unparsable(err string) bool { return strings.HasPrefix(err, "the script does not parse") }

// lintReport prints one script's findings and summary; it reports whether
// the script is blind for some key.
func lintReport(w io.Writer, file string, r *scriptcheck.Report, verbose bool) bool {
	what := "script " + r.SHA
	if r.Function != "" {
		what = "function " + r.Function
	}
	if r.Err != "" {
		fmt.Fprintf(w, "%s:%d: unknown: %s\n", file, r.ErrLine, r.Err)
		fmt.Fprintf(w, "%s: %s: unknown (not analysed)\n", file, what)
		return false
	}
	// Per target, the worst site decides.
	type agg struct {
		v     scriptcheck.Verdict
		order int
	}
	targets := map[string]*agg{}
	var names []string
	blind := false
	for _, s := range r.Sites {
		if verbose || s.Verdict == scriptcheck.Blind || s.Verdict == scriptcheck.Unknown {
			fmt.Fprintf(w, "%s:%d: %s: %s\n", file, s.Line, s.Verdict, s.Reason)
		}
		blind = blind || s.Verdict == scriptcheck.Blind
		t := s.Target.String()
		a, ok := targets[t]
		if !ok {
			a = &agg{v: s.Verdict, order: len(names)}
			targets[t] = a
			names = append(names, t)
		} else if s.Verdict.Worse(a.v) {
			a.v = s.Verdict
		}
	}
	parts := make([]string, 0, len(names))
	for _, t := range names {
		parts = append(parts, t+" "+targets[t].v.String())
	}
	summary := "touches no key"
	if len(parts) > 0 {
		summary = strings.Join(parts, ", ")
	}
	fmt.Fprintf(w, "%s: %s: %s: %s\n", file, what, r.Overall(), summary)
	return blind
}
