package admin

import (
	"strconv"
	"strings"
	"time"

	"github.com/lockproxy/lockproxy/policy"
	"github.com/lockproxy/lockproxy/resp"
	"github.com/lockproxy/lockproxy/telemetry"
)

const timeFormat = "2006-01-02T15:04:05.000Z07:00"

func fmtTime(t time.Time) string { return t.UTC().Format(timeFormat) }

func ms(d time.Duration) int64 { return d.Milliseconds() }

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// AUDIT [COUNT n] [KEY pattern] [OUTCOME name]
func (a *Admin) audit(c Conn, args [][]byte) []byte {
	n := 10
	var key *policy.Pattern
	var outcome telemetry.Outcome
	for i := 0; i < len(args); i += 2 {
		if i+1 >= len(args) {
			return resp.AppendError(nil, errAuditNoValue(strings.ToUpper(string(args[i]))))
		}
		v := args[i+1]
		switch strings.ToUpper(string(args[i])) {
		case "COUNT":
			count, err := strconv.Atoi(string(v))
			if err != nil || count <= 0 {
				return resp.AppendError(nil, errAuditCount)
			}
			n = count
		case "KEY":
			key = policy.CompileAny(string(v))
		case "OUTCOME":
			outcome = telemetry.Outcome(strings.ToLower(string(v)))
			if telemetry.OutcomeIndex(outcome) < 0 {
				return resp.AppendError(nil, errAuditOutcome(string(v)))
			}
		default:
			return resp.AppendError(nil, errAuditOption(string(args[i])))
		}
	}
	evs := a.h.Events(n, func(e *telemetry.Event) bool {
		return (key == nil || key.Match([]byte(e.Key))) && (outcome == "" || e.Outcome == outcome)
	})
	list := make([][]Field, len(evs))
	for i, e := range evs {
		list[i] = eventFields(&e)
	}
	return EncodeValue(nil, list, c.Proto())
}

func eventFields(e *telemetry.Event) []Field {
	return []Field{
		{"time", fmtTime(e.Time)},
		{"outcome", string(e.Outcome)},
		{"command", e.Command},
		{"key", e.Key},
		{"rule", e.Rule},
		{"client", e.Client},
		{"client_name", e.Name},
		{"owner", e.Owner},
		{"holder", e.Holder},
		{"token", e.Token},
		{"grant", e.Grant},
		{"detail", e.Detail},
	}
}
