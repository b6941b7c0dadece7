package upstream

import (
	"fmt"
	"net"
	"strings"
)

// The rights of its ACL user lockproxy needs on Valkey, each tried with a
// command that has no effect: Valkey checks the ACL before it looks at the
// arguments, so a refused right answers NOPERM, a granted one an argument
// error (or NOSCRIPT). Which rights are needed is the proxy's to say (its
// database, its lock rules); trying them is here.

// Right is one right and the command that tries it.
type Right struct {
	Name string   // as ACL SETUSER spells it: +select, +eval, +script|load ...
	Try  []string // a command that needs only this right, and changes nothing
	// Why says what fails without it.
	Why string
}

// The rights lockproxy's own commands need (docs/operations.md, ACL
// recipes). With lock rules: its scripts (EVALSHA, EVAL on NOSCRIPT,
// SCRIPT LOAD on each new connection) and TIME inside them; in any
// database but 0, SELECT on each new connection.
var (
	RightEvalSHA = Right{"+evalsha", []string{"EVALSHA", "0000000000000000000000000000000000000000", "-1"},
		"lock commands run lockproxy's scripts by EVALSHA"}
	RightEval = Right{"+eval", []string{"EVAL", "return 1", "-1"},
		"lock commands run lockproxy's scripts by EVAL when Valkey lacks them"}
	RightScriptLoad = Right{"+script|load", []string{"SCRIPT", "LOAD", "("},
		"each new connection loads lockproxy's scripts"}
	// TIME is tried inside a script, as lockproxy's run it (after
	// +eval: without it the refusal is EVAL's, and +time is not named).
	RightTime = Right{"+time", []string{"EVAL", "return redis.call('TIME')", "0"},
		"lockproxy's scripts read Valkey's clock"}
)

// RightSelect is the right to SELECT db, which every new connection in a
// database other than 0 sends.
func RightSelect(db int) Right {
	return Right{"+select", []string{"SELECT", fmt.Sprint(db)},
		fmt.Sprintf("every connection selects database %d (upstream.db)", db)}
}

// RightsError names the rights Valkey refused.
type RightsError struct {
	Missing []Right
	Detail  string // Valkey's answer to the first
}

func (e *RightsError) Error() string {
	names := make([]string, len(e.Missing))
	for i, r := range e.Missing {
		names[i] = r.Name
	}
	return fmt.Sprintf("the ACL user lacks %s: %s (Valkey answered %s)",
		strings.Join(names, " "), e.Missing[0].Why, e.Detail)
}

// TryRights sends each right's command on nc (logged in, its deadline
// set) in one write, recorded with record when not nil, and returns a
// *RightsError naming those Valkey answered NOPERM, or the connection's
// error.
func TryRights(nc net.Conn, rights []Right, record func(nc net.Conn, n int) (done func())) error {
	if len(rights) == 0 {
		return nil
	}
	cmds := make([][]string, len(rights))
	for i, r := range rights {
		cmds[i] = r.Try
	}
	if record != nil {
		defer record(nc, len(cmds))()
	}
	replies, err := RoundTrip(nc, cmds)
	if err != nil {
		return err
	}
	var e RightsError
	for i, rep := range replies {
		if msg, refused := refuses(rep, rights[i]); refused {
			if e.Missing == nil {
				e.Detail = msg
			}
			e.Missing = append(e.Missing, rights[i])
		}
	}
	if e.Missing != nil {
		return &e
	}
	return nil
}

// refuses reports whether rep is Valkey's ACL refusal of r (NOPERM, or
// within a script "ACL failure in script"; either names the command: "User
// u has no permissions to run the 'time' command"), and its text. The
// refusal of another command (EVAL, which tries +time) is not r's.
func refuses(rep []byte, r Right) (string, bool) {
	if len(rep) == 0 || rep[0] != '-' {
		return "", false
	}
	msg := strings.TrimRight(string(rep[1:]), "\r\n")
	return msg, strings.Contains(msg, "no permissions to run the '"+strings.TrimPrefix(r.Name, "+")+"' command")
}
