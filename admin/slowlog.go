package admin

import (
	"strconv"
	"strings"

	"github.com/lockproxy/lockproxy/resp"
	"github.com/lockproxy/lockproxy/telemetry"
)

// SLOWLOG [GET [count] | LEN | RESET]: the slow log (telemetry.SlowLog),
// shaped as Valkey's SLOWLOG answers, so tools that read one read the
// other: each entry is id, Unix time, microseconds, the command's
// "arguments", client address and client name. In place of the arguments
// it gives the command's name and what is known of it as key=value
// strings; lockproxy never keeps an argument's value.
func (a *Admin) slowlog(c Conn, args [][]byte) []byte {
	l := a.h.SlowLog()
	sub := "GET"
	if len(args) > 0 {
		sub = strings.ToUpper(string(args[0]))
	}
	switch {
	case sub == "LEN" && len(args) == 1:
		return resp.AppendInt(nil, int64(l.Len()))
	case sub == "RESET" && len(args) == 1:
		if msg := a.Denied(c.ID(), "LOCKPROXY SLOWLOG RESET", false, true); msg != "" {
			return resp.AppendError(nil, msg)
		}
		l.Reset()
		return resp.AppendSimple(nil, "OK")
	case sub == "GET":
		n := 10
		if len(args) == 2 {
			v, err := strconv.Atoi(string(args[1]))
			if err != nil || v < -1 {
				return resp.AppendError(nil, errSlowlogCount)
			}
			n = v
		}
		return appendSlow(nil, l.Recent(n))
	case sub == "LEN" || sub == "RESET":
		return resp.AppendError(nil, errWrongArgs("lockproxy|slowlog|"+strings.ToLower(sub)))
	}
	return resp.AppendError(nil, errSlowlogSub(string(args[0])))
}

func appendSlow(out []byte, list []telemetry.Slow) []byte {
	out = resp.AppendArrayHeader(out, len(list))
	for _, e := range list {
		out = resp.AppendArrayHeader(out, 6)
		out = resp.AppendInt(out, e.ID)
		out = resp.AppendInt(out, e.At.Unix())
		out = resp.AppendInt(out, e.Duration.Microseconds())
		notes := []string{e.Command, "keys=" + strconv.Itoa(e.Keys), "args=" + strconv.Itoa(e.Args),
			"client_id=" + strconv.FormatUint(e.ClientID, 10)}
		if e.Error != "" {
			notes = append(notes, "error="+e.Error)
		}
		out = resp.AppendArrayHeader(out, len(notes))
		for _, s := range notes {
			out = resp.AppendBulk(out, []byte(s))
		}
		out = resp.AppendBulk(out, []byte(e.Addr))
		out = resp.AppendBulk(out, []byte(e.Name))
	}
	return out
}
