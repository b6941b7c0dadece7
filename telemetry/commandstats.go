package telemetry

import "sync/atomic"

// ErrorCodes are the labels of lockproxy_command_errors_total{code}: the
// code words Valkey and lockproxy start their error replies with, and
// "other" for any other word, so the number of series stays bounded
// whatever a server or module answers. Read-only.
var ErrorCodes = [...]string{
	// Valkey's.
	"ERR", "WRONGTYPE", "NOAUTH", "WRONGPASS", "NOPERM", "NOSCRIPT", "BUSY", "BUSYKEY",
	"BUSYGROUP", "LOADING", "READONLY", "MOVED", "ASK", "TRYAGAIN", "CROSSSLOT",
	"CLUSTERDOWN", "EXECABORT", "NOTBUSY", "NOREPLICAS", "MASTERDOWN", "MISCONF", "OOM",
	"NOPROTO", "NOGROUP", "UNKILLABLE", "UNBLOCKED",
	// lockproxy's.
	"NOTOWNER", "TOKENRELEASE", "LOCKED", "UNFENCED", "STALE", "NOTDURABLE", "UPSTREAM",
	"LEASE", "INDEXING", "AUTHLIMIT", "EXISTS",
	"other",
}

// NumErrorCodes is how many code labels there are.
const NumErrorCodes = len(ErrorCodes)

// CodeOther is the index of "other" in ErrorCodes.
const CodeOther = NumErrorCodes - 1

// ErrorCode is the index in ErrorCodes of the code word of reply, a whole
// RESP reply: -1 when it is not an error ('-' or RESP3's '!'), CodeOther
// for a word not listed. It does not allocate.
func ErrorCode(reply []byte) int {
	if len(reply) < 2 {
		return -1
	}
	var word []byte
	switch reply[0] {
	case '-':
		word = reply[1:]
	case '!':
		// !<length>\r\n<text>\r\n
		i := 1
		for i < len(reply) && reply[i] != '\n' {
			i++
		}
		if i+1 >= len(reply) {
			return CodeOther
		}
		word = reply[i+1:]
	default:
		return -1
	}
	n := 0
	for n < len(word) && word[n] != ' ' && word[n] != '\r' {
		n++
	}
	word = word[:n]
	for i := 0; i < CodeOther; i++ {
		if ErrorCodes[i] == string(word) {
			return i
		}
	}
	return CodeOther
}

// CommandStats counts, per command label (the proxy's numbering, 0 to the
// number it was made with): the commands handled, their error replies by
// code word, and the time from the command's first byte read to its
// reply handed to the client's socket, as the client sees it. Each cell
// is a fixed block of atomics: recording allocates nothing.
type CommandStats struct {
	cells []commandCell
}

type commandCell struct {
	total   atomic.Int64
	errors  [NumErrorCodes]atomic.Int64
	latency histogram
}

// NewCommandStats makes the counters of n labels.
func NewCommandStats(n int) *CommandStats {
	return &CommandStats{cells: make([]commandCell, n)}
}

// Count counts one command of label l handled.
func (c *CommandStats) Count(l int) { c.cells[l].total.Add(1) }

// Observe records the reply to a command of label l: d nanoseconds from its
// first byte in to its reply out, and its error code (an ErrorCodes index;
// -1 for a reply that is no error).
func (c *CommandStats) Observe(l int, d int64, code int) {
	h := &c.cells[l]
	if code >= 0 {
		h.errors[code].Add(1)
	}
	if d < 0 {
		d = 0
	}
	j := 0
	for j < numRTBuckets && d > rtBoundsNs[j] {
		j++
	}
	h.latency.add(j, 1, d, d, d)
}

// Total is how many commands of label l were handled.
func (c *CommandStats) Total(l int) int64 { return c.cells[l].total.Load() }

// Errors is how many replies to label l's commands were errors of code.
func (c *CommandStats) Errors(l, code int) int64 { return c.cells[l].errors[code].Load() }

// Latency reads label l's histogram.
func (c *CommandStats) Latency(l int) Snapshot { return c.cells[l].latency.snapshot() }

// Len is how many labels c counts.
func (c *CommandStats) Len() int { return len(c.cells) }
