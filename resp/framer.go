package resp

// maxDepth caps reply nesting. Valkey never nests anywhere near this deep
// (Lua replies stop at a few hundred levels), so anything deeper is a broken
// or hostile stream.
const maxDepth = 1 << 16

// Framer finds reply boundaries in a stream of RESP2/RESP3 replies, so the
// proxy can hand each reply to the client that asked for it without
// decoding it.
//
// It understands every RESP2 and RESP3 type: + - : $ * and _ , # ! = ( % ~
// > |, plus the RESP2 nulls "$-1" and "*-1". An attribute ('|') and the
// reply it annotates count as one frame, since the client expects them
// together. Streamed strings and aggregates ("$?", "*?"), which Valkey never
// sends, are errors, as is anything malformed.
//
// The scan is iterative (an explicit stack of open aggregates), so hostile
// nesting can not overflow the goroutine stack, and resumable: it keeps its
// position between calls, so a reply that arrives in many pieces is scanned
// once, O(n) in total.
//
// The zero Framer is ready to use.
type Framer struct {
	pos   int     // start of the next token to scan
	scan  int     // where the search for that token's line end resumes
	stack []int64 // elements still owed by each open aggregate, innermost last
}

// Reset makes the Framer start afresh at the beginning of the next buf.
func (f *Framer) Reset() {
	f.pos, f.scan = 0, 0
	f.stack = f.stack[:0]
}

// Frame reports the length of the first complete reply at the start of buf
// (an attribute '|' and the reply it annotates count as one), or 0 when buf
// holds only part of it. Calls with a growing buf that starts at the same
// reply resume where the last scan stopped. After it returns n > 0 the
// caller drops buf[:n] and the Framer starts afresh by itself: keep using
// the same Framer (replacing it with a zero Framer throws away its stack and
// costs an allocation per aggregate reply). After an error it starts afresh
// too, but the stream is beyond repair.
func (f *Framer) Frame(buf []byte) (int, error) {
	if f.pos > len(buf) {
		// A shorter buf can not be the same reply grown: start over rather
		// than index past its end.
		f.Reset()
	}
	pos, scan := f.pos, f.scan
	for {
		if pos >= len(buf) {
			f.pos, f.scan = pos, pos
			return 0, nil
		}
		t := buf[pos]
		class := typeClass[t]
		if class == 0 {
			return f.fail(errBadType)
		}
		cr := indexCR(buf, max(scan, pos+1))
		// Length lines are short: do not wait for megabytes of garbage to
		// find out that a length is bad. Judge the line by what has arrived
		// of it, so the verdict does not depend on how the stream was cut.
		if class == counted {
			end := cr
			if cr < 0 {
				end = len(buf)
			}
			if end-pos-1 > maxCountDigits {
				return f.fail(errBadLength)
			}
		}
		if cr < 0 {
			f.pos, f.scan = pos, len(buf)
			return 0, nil
		}
		if cr+1 >= len(buf) {
			f.pos, f.scan = pos, cr
			return 0, nil
		}
		if buf[cr+1] != '\n' {
			return f.fail(errBadLineEnd)
		}
		line := buf[pos+1 : cr]
		next := cr + 2
		switch t {
		case '+', '-':
		case ':':
			if _, ok := parseReplyInt(line); !ok {
				return f.fail(errBadInteger)
			}
		case '$', '!', '=':
			n, err := countLine(t, line)
			if err != nil {
				return f.fail(err)
			}
			if n >= 0 {
				if int64(len(buf)-next) < n+2 {
					// Resume at this header: re-reading a short line is
					// cheaper than keeping more state, and the body is
					// never rescanned.
					f.pos, f.scan = pos, cr
					return 0, nil
				}
				end := next + int(n)
				if buf[end] != '\r' || buf[end+1] != '\n' {
					return f.fail(errBadBulkEnd)
				}
				if t == '=' && (n < 4 || buf[next+3] != ':') {
					return f.fail(errBadVerbatim)
				}
				next = end + 2
			}
		case '*', '%', '~', '>', '|':
			n, err := countLine(t, line)
			if err != nil {
				return f.fail(err)
			}
			switch t {
			case '%':
				n *= 2
			case '|':
				// The pairs, then the reply they annotate: the whole
				// counts as one element of whatever contains it.
				n = 2*n + 1
			}
			if n > 0 {
				if len(f.stack) >= maxDepth {
					return f.fail(errTooDeep)
				}
				f.stack = append(f.stack, n)
				pos, scan = next, next
				continue
			}
		case '_':
			if len(line) != 0 {
				return f.fail(errBadNull)
			}
		case '#':
			if len(line) != 1 || (line[0] != 't' && line[0] != 'f') {
				return f.fail(errBadBool)
			}
		case ',':
			if !isDouble(line) {
				return f.fail(errBadDouble)
			}
		}
		// '(' is not checked: Valkey passes on a script's big number
		// as the script gave it (a CRLF in it made two spaces), so a
		// big number is any line, as in a simple string.
		// A value ended at next; it may complete its enclosing aggregates.
		pos, scan = next, next
		for len(f.stack) > 0 {
			top := len(f.stack) - 1
			f.stack[top]--
			if f.stack[top] > 0 {
				break
			}
			f.stack = f.stack[:top]
		}
		if len(f.stack) == 0 {
			f.pos, f.scan = 0, 0
			return pos, nil
		}
	}
}

func (f *Framer) fail(err error) (int, error) {
	f.Reset()
	return 0, err
}

// typeClass tells reply type bytes apart from garbage before any scanning,
// and marks the types whose line is a length or element count.
var typeClass = [256]uint8{
	'+': line, '-': line, ':': line, '_': line, ',': line, '#': line, '(': line,
	'$': counted, '!': counted, '=': counted,
	'*': counted, '%': counted, '~': counted, '>': counted, '|': counted,
}

const (
	line    = 1
	counted = 2
)

// countLine parses a length or count; -1 means null, allowed only where
// RESP2 has nulls ("$-1", "*-1").
func countLine(t byte, line []byte) (int64, error) {
	if len(line) == 2 && line[0] == '-' && line[1] == '1' && (t == '$' || t == '*') {
		return -1, nil
	}
	if len(line) == 1 && line[0] == '?' {
		return 0, errStreamed
	}
	n, ok := parseCount(line)
	if !ok {
		return 0, errBadLength
	}
	return n, nil
}
