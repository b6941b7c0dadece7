package resp

import (
	"bytes"
	"errors"
	"io"
	"math"
)

// Limits bound what one client may make the Reader hold. The zero value of a
// field means "use the default" (DefaultLimits).
type Limits struct {
	MaxBulkLen     int64 // proto-max-bulk-len: largest bulk a client may send (default 512 MiB)
	MaxQueryBuffer int64 // client-query-buffer-limit: largest single command, in bytes as received (default 1 GiB)
	MaxInlineLen   int   // longest inline line, and longest '*'/'$' header line (default 64 KiB, PROTO_INLINE_MAX_SIZE)
	MaxArgs        int64 // most arguments in one command (default INT_MAX, Valkey's multibulk limit)
}

// DefaultLimits returns Valkey's defaults.
func DefaultLimits() Limits {
	return Limits{
		MaxBulkLen:     512 << 20,
		MaxQueryBuffer: 1 << 30,
		MaxInlineLen:   64 << 10,
		MaxArgs:        math.MaxInt32,
	}
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.MaxBulkLen <= 0 {
		l.MaxBulkLen = d.MaxBulkLen
	}
	if l.MaxQueryBuffer <= 0 {
		l.MaxQueryBuffer = d.MaxQueryBuffer
	}
	if l.MaxInlineLen <= 0 {
		l.MaxInlineLen = d.MaxInlineLen
	}
	if l.MaxArgs <= 0 {
		l.MaxArgs = d.MaxArgs
	}
	return l
}

const (
	// minBufSize is the first buffer a Reader reads into, and what a large
	// buffer shrinks back to once it is mostly empty (Valkey reads in
	// PROTO_IOBUF_LEN = 16 KiB steps too).
	minBufSize = 16 << 10
	// shrinkAbove keeps buffers up to this size: shrinking them would make a
	// workload of medium values reallocate on every command for little gain.
	shrinkAbove = 4 * minBufSize
	// maxGrowStep caps one growth step so a 600 MiB value does not double
	// the buffer to 1 GiB when 700 MiB would do.
	maxGrowStep = 256 << 20
	// maxKeptArgs is the Args capacity kept between commands: a one-off
	// million-argument command must not pin 24 MB per connection.
	maxKeptArgs = 4096
	// maxEmptyReads is how many (0, nil) reads in a row are tolerated.
	maxEmptyReads = 100
)

// Command is one client command. Args and Raw alias the Reader's buffers and
// stay valid only until the next ReadCommand.
type Command struct {
	// Args are the arguments; Args[0] is the command name as sent. Each has
	// no spare capacity, so appending to one can not overwrite the buffer.
	Args [][]byte
	// Raw is the RESP encoding to forward: the exact bytes received for a
	// multibulk command; a fresh RESP array for an inline one.
	Raw []byte
}

// Reader reads client commands from a stream, the way Valkey's
// processInputBuffer does: multibulk ('*') and inline commands, Valkey's
// limits and Valkey's error texts.
//
// It owns one growable buffer. The buffer grows only with bytes that have
// arrived (never from an announced length), and shrinks back to 16 KiB once
// a large command has been consumed, so an idle connection costs little.
// A partially received command is parsed incrementally: bytes are examined
// once, however the stream is chunked.
//
// Two places deliberately follow Valkey rather than a strict reading of
// RESP: the byte after a header's '\r' and the two bytes after a bulk are
// skipped without checking they are "\n" / "\r\n" (Valkey forwards the same
// bytes, so both sides stay in step), and an inline line is cut at its first
// NUL byte (sdssplitargs reads a C string). Where Valkey's outcome depends
// on how the bytes happened to be split into reads (overlong lines), the
// Reader gives the byte-at-a-time answer, so results never depend on
// chunking.
type Reader struct {
	rd     io.Reader
	lim    Limits
	before func()
	auth   bool // Valkey's limits for not yet authenticated clients apply

	buf  []byte
	r, w int // buf[r:w] is unconsumed; r is where the current command starts

	// Parse state of the command starting at buf[r].
	kind  byte  // 0 none yet, '*' multibulk, 'i' inline
	pos   int   // first byte not yet parsed
	scan  int   // where the search for the current line's end resumes
	nargs int64 // announced argument count, -1 before the '*' line is read
	nleft int64 // arguments still to read
	bulk  int64 // length of the bulk being read, -1 before its '$' line
	stale bool  // buffer moved under args collected so far: rebuild them

	args   [][]byte
	inl    []byte // RESP encoding of the last inline command; its Args alias it
	tmp    []byte // inline arguments, unescaped
	ends   []int  // end of each inline argument in tmp
	starts []int  // start of each inline argument in inl

	rerr error // read error held back until the buffered bytes are parsed
	err  error // sticky protocol error
}

// NewReader returns a Reader of client commands from rd. Zero fields of lim
// take their defaults.
func NewReader(rd io.Reader, lim Limits) *Reader {
	return &Reader{rd: rd, lim: lim.withDefaults()}
}

// Reset makes r read from rd as if new, keeping its buffer for reuse.
func (r *Reader) Reset(rd io.Reader) {
	*r = Reader{
		rd: rd, lim: r.lim, before: r.before,
		buf: r.buf, args: r.args[:0], inl: r.inl[:0], tmp: r.tmp[:0],
		ends: r.ends[:0], starts: r.starts[:0],
	}
	if len(r.buf) > minBufSize {
		r.buf = nil
	}
}

// SetSource makes r read further bytes from rd, keeping what it buffered:
// the proxy moves a client between its event loop and a goroutine of its
// own without losing a byte.
func (r *Reader) SetSource(rd io.Reader) { r.rd = rd }

// SetBeforeFill sets f to be called each time the Reader is about to call
// rd.Read (i.e. it may block): the proxy flushes queued work there, so a
// pipelined batch goes upstream before the Reader waits for more.
func (r *Reader) SetBeforeFill(f func()) { r.before = f }

// SetAuthRequired turns on Valkey's limits for clients that have not
// authenticated yet: at most 10 arguments ("unauthenticated multibulk
// length") and bulks of at most 16384 bytes ("unauthenticated bulk length").
// It is off by default.
func (r *Reader) SetAuthRequired(on bool) { r.auth = on }

// Buffered returns how many received bytes have not been returned as
// commands yet (they may hold further complete commands, or a partial one).
func (r *Reader) Buffered() int { return r.w - r.r }

// Take returns the received bytes not yet returned as commands and forgets
// them: the proxy hands them on as they are once a client's connection
// has become a byte pipe (replication after SYNC). The slice is valid until
// the next call on r.
func (r *Reader) Take() []byte {
	b := r.buf[r.r:r.w]
	r.r = r.w
	return b
}

// ReadCommand returns the next command; empty commands ("*0", "*-1", blank
// lines) are skipped as Valkey does.
//
// Malformed input gives a *ProtocolError whose text is Valkey's without
// "ERR " (e.g. "Protocol error: invalid bulk length"); a command larger than
// MaxQueryBuffer gives "Protocol error: query buffer limit exceeded" (Valkey
// drops such clients without a reply). After a ProtocolError every call
// returns it again: the stream can not be resynchronised.
//
// Read errors are returned as they come, except that io.EOF in the middle
// of a command becomes io.ErrUnexpectedEOF. They are not sticky: after a
// timeout the caller may call ReadCommand again and parsing resumes.
func (r *Reader) ReadCommand() (Command, error) {
	if r.err != nil {
		return Command{}, r.err
	}
	for {
		if r.kind == 0 && r.r < r.w && r.buf[r.r] == '*' {
			if raw, ok := r.fastMultibulk(); ok {
				return Command{Args: r.args, Raw: raw}, nil
			}
		}
		cmd, ok, err := r.parse()
		if err != nil {
			r.err = err
			return Command{}, err
		}
		if ok {
			return cmd, nil
		}
		// Whatever is buffered now is one unfinished command.
		if int64(r.w-r.r) > r.lim.MaxQueryBuffer {
			r.err = errQueryBufferLimit
			return Command{}, r.err
		}
		if r.rerr != nil {
			err := r.rerr
			r.rerr = nil
			return Command{}, r.readErr(err)
		}
		if err := r.fill(); err != nil {
			return Command{}, err
		}
	}
}

func (r *Reader) readErr(err error) error {
	if err == io.EOF && r.w > r.r {
		return io.ErrUnexpectedEOF
	}
	return err
}

var errBadRead = errors.New("resp: reader returned an invalid count")

// fill reads more bytes, first making room: the unfinished command moves to
// the front, a mostly empty large buffer is swapped for a small one, and a
// full buffer grows in proportion to what it holds.
func (r *Reader) fill() error {
	if r.r > 0 {
		n := copy(r.buf, r.buf[r.r:r.w])
		r.pos -= r.r
		r.scan -= r.r
		r.r, r.w = 0, n
		r.stale = true
	}
	switch {
	case len(r.buf) > shrinkAbove && r.w <= minBufSize/2:
		r.replace(minBufSize)
	case r.w == len(r.buf):
		n := minBufSize
		if size := len(r.buf); size > 0 {
			n = size + min(size, maxGrowStep)
			// Never hold more than the limit allows: one byte over it is
			// enough to know the command is too large.
			if lim := r.lim.MaxQueryBuffer + 1; int64(n) > lim && int64(size) < lim {
				n = int(lim)
			}
		}
		r.replace(n)
	}
	if r.before != nil {
		r.before()
	}
	for range maxEmptyReads {
		n, err := r.rd.Read(r.buf[r.w:])
		if n < 0 || n > len(r.buf)-r.w {
			return errBadRead
		}
		r.w += n
		if err != nil {
			if n > 0 {
				r.rerr = err
				return nil
			}
			return r.readErr(err)
		}
		if n > 0 {
			return nil
		}
	}
	return io.ErrNoProgress
}

func (r *Reader) replace(size int) {
	nb := make([]byte, size)
	copy(nb, r.buf[:r.w])
	r.buf = nb
	r.stale = true
	// Drop references to the old buffer held past len(args), or it would
	// stay reachable until those slots are overwritten.
	clear(r.args[:cap(r.args)])
}

// parse tries to complete a command from the buffered bytes, skipping
// empty ones. ok is false when more bytes are needed.
func (r *Reader) parse() (cmd Command, ok bool, err error) {
	for r.r < r.w {
		if r.kind == 0 {
			r.begin()
		}
		var done bool
		if r.kind == '*' {
			done, err = r.parseMultibulk()
		} else {
			done, err = r.parseInline()
		}
		if err != nil || !done {
			return Command{}, false, err
		}
		start, end := r.r, r.pos
		r.r, r.kind = end, 0
		if int64(end-start) > r.lim.MaxQueryBuffer {
			return Command{}, false, errQueryBufferLimit
		}
		if len(r.args) == 0 {
			continue
		}
		if r.buf[start] != '*' {
			return Command{Args: r.args, Raw: r.inl}, true, nil
		}
		if r.stale {
			r.rebuild(start)
		}
		return Command{Args: r.args, Raw: r.buf[start:end:end]}, true, nil
	}
	// Everything is consumed: restart at the front so fill has nothing to move.
	r.r, r.w = 0, 0
	return Command{}, false, nil
}

func (r *Reader) begin() {
	if cap(r.args) > maxKeptArgs {
		r.args = nil
	}
	// A long inline line leaves side buffers of a few hundred KiB; do not
	// keep them for the life of the connection.
	if cap(r.inl) > shrinkAbove || cap(r.ends) > maxKeptArgs {
		r.inl, r.tmp, r.ends, r.starts = nil, nil, nil, nil
	}
	r.args = r.args[:0]
	r.stale = false
	r.pos, r.scan = r.r, r.r
	if r.buf[r.r] == '*' {
		r.kind = '*'
		r.nargs, r.nleft, r.bulk = -1, 0, -1
	} else {
		r.kind = 'i'
	}
}

// line finds the end of the header line starting at pos: the index of its
// '\r', once the byte after it has arrived too (Valkey needs both), or -1.
// A line longer than MaxInlineLen is an error, whether or not its '\r' has
// arrived, so the outcome does not depend on read sizes.
func (r *Reader) line(buf []byte, pos int, tooBig *ProtocolError) (int, error) {
	cr := indexCR(buf, max(r.scan, pos))
	if cr < 0 {
		if len(buf)-pos > r.lim.MaxInlineLen {
			return -1, tooBig
		}
		r.scan = len(buf)
		return -1, nil
	}
	if cr-pos > r.lim.MaxInlineLen {
		return -1, tooBig
	}
	if cr+1 >= len(buf) {
		r.scan = cr
		return -1, nil
	}
	return cr, nil
}

// indexCR returns the index of the first '\r' in b at or after from, or -1.
func indexCR(b []byte, from int) int {
	// Header lines are a few bytes long: a plain loop beats IndexByte's
	// setup cost there, and IndexByte takes over for long lines.
	end := min(from+16, len(b))
	for i := from; i < end; i++ {
		if b[i] == '\r' {
			return i
		}
	}
	if end >= len(b) {
		return -1
	}
	if j := bytes.IndexByte(b[end:], '\r'); j >= 0 {
		return end + j
	}
	return -1
}

func (r *Reader) parseMultibulk() (bool, error) {
	buf := r.buf[:r.w]
	pos := r.pos
	if r.nargs < 0 {
		cr, err := r.line(buf, pos, errTooBigMbulkCount)
		if cr < 0 {
			return false, err
		}
		n, ok := parseLL(buf[pos+1 : cr])
		if !ok || n > r.lim.MaxArgs {
			return false, errInvalidMultibulkLen
		}
		if r.auth && n > 10 {
			return false, errUnauthMultibulkLen
		}
		pos = cr + 2 // Valkey skips the byte after '\r' unseen
		r.scan = pos
		if n <= 0 {
			r.pos = pos
			return true, nil
		}
		r.nargs, r.nleft = n, n
	}
	for r.nleft > 0 {
		if r.bulk < 0 {
			cr, err := r.line(buf, pos, errTooBigBulkCount)
			if cr < 0 {
				r.pos = pos
				return false, err
			}
			if buf[pos] != '$' {
				return false, expectedDollar(buf[pos])
			}
			n, ok := parseLL(buf[pos+1 : cr])
			if !ok || n < 0 || n > r.lim.MaxBulkLen {
				return false, errInvalidBulkLen
			}
			if r.auth && n > 16384 {
				return false, errUnauthBulkLen
			}
			pos = cr + 2
			r.bulk = n
		}
		if int64(len(buf)-pos) < r.bulk+2 {
			r.pos, r.scan = pos, pos
			return false, nil
		}
		end := pos + int(r.bulk)
		r.args = append(r.args, buf[pos:end:end])
		// Valkey does not check that "\r\n" follows the bulk; neither do we.
		pos = end + 2
		r.scan = pos
		r.bulk = -1
		r.nleft--
	}
	r.pos = pos
	return true, nil
}

// fastMultibulk parses a complete, plainly formed multibulk command at
// buf[r.r] in one pass, with no state kept between calls. Anything else
// (incomplete, empty, unusual or wrong) makes it give up without effect,
// and the general parser starts over on the same bytes. It exists because
// that one case is nearly every command a proxy sees.
func (r *Reader) fastMultibulk() ([]byte, bool) {
	buf := r.buf[r.r:r.w]
	n, pos, ok := fastLen(buf, 0)
	if !ok || n == 0 || int64(n) > r.lim.MaxArgs || r.auth {
		return nil, false
	}
	args := r.args[:0]
	for range n {
		if pos >= len(buf) || buf[pos] != '$' {
			return nil, false
		}
		l, p, ok := fastLen(buf, pos)
		end := p + l
		if !ok || int64(l) > r.lim.MaxBulkLen || end+2 > len(buf) {
			return nil, false
		}
		args = append(args, buf[p:end:end])
		pos = end + 2
	}
	if int64(pos) > r.lim.MaxQueryBuffer {
		return nil, false
	}
	r.args = args
	r.r += pos
	return buf[:pos:pos], true
}

// fastLen reads the number in a header line at buf[pos] when it is short
// and plain: 1 to 9 digits, no leading zero, then "\r\n".
func fastLen(buf []byte, pos int) (n, next int, ok bool) {
	// One digit is the most common length by far; keep that path small
	// enough to inline.
	if pos+3 < len(buf) && buf[pos+2] == '\r' && buf[pos+3] == '\n' {
		if d := buf[pos+1] - '0'; d <= 9 {
			return int(d), pos + 4, true
		}
		return 0, 0, false
	}
	return fastLenLong(buf, pos)
}

func fastLenLong(buf []byte, pos int) (n, next int, ok bool) {
	i := pos + 1
	end := min(len(buf), i+10)
	for ; i < end; i++ {
		c := buf[i]
		if c == '\r' {
			break
		}
		if c -= '0'; c > 9 {
			return 0, 0, false
		}
		n = n*10 + int(c)
	}
	digits := i - pos - 1
	if i >= end || i+1 >= len(buf) || buf[i+1] != '\n' || digits == 0 || (digits > 1 && buf[pos+1] == '0') {
		return 0, 0, false
	}
	return n, i + 2, true
}

// rebuild re-slices Args after the buffer moved under a command that
// arrived in pieces. The command is complete and valid, so it only walks
// the headers again.
func (r *Reader) rebuild(start int) {
	buf := r.buf
	pos := indexCR(buf, start) + 2
	r.args = r.args[:0]
	for range r.nargs {
		cr := indexCR(buf, pos)
		n, _ := parseLL(buf[pos+1 : cr])
		pos = cr + 2
		end := pos + int(n)
		r.args = append(r.args, buf[pos:end:end])
		pos = end + 2
	}
}

func (r *Reader) parseInline() (bool, error) {
	buf := r.buf[:r.w]
	start := r.r
	from := max(r.scan, start)
	nl := bytes.IndexByte(buf[from:], '\n')
	if nl < 0 {
		if len(buf)-start > r.lim.MaxInlineLen {
			return false, errTooBigInline
		}
		r.scan = len(buf)
		return false, nil
	}
	nl += from
	if nl-start > r.lim.MaxInlineLen {
		return false, errTooBigInline
	}
	end := nl
	if end > start && buf[end-1] == '\r' {
		end--
	}
	var ok bool
	r.tmp, r.ends, ok = splitInline(buf[start:end], r.tmp[:0], r.ends[:0])
	if !ok {
		return false, errUnbalancedQuotes
	}
	r.pos = nl + 1
	if len(r.ends) == 0 {
		return true, nil
	}
	// Forward inline commands as RESP, so upstream only ever sees one
	// protocol; Args point into that encoding.
	inl := AppendArrayHeader(r.inl[:0], len(r.ends))
	r.starts = r.starts[:0]
	prev := 0
	for _, e := range r.ends {
		inl = appendLen(inl, '$', int64(e-prev))
		r.starts = append(r.starts, len(inl))
		inl = append(inl, r.tmp[prev:e]...)
		inl = append(inl, '\r', '\n')
		prev = e
	}
	r.inl = inl
	prev = 0
	for i, e := range r.ends {
		s := r.starts[i]
		r.args = append(r.args, inl[s:s+e-prev:s+e-prev])
		prev = e
	}
	return true, nil
}

// Clone copies c out of the reader's buffer, which the next read reuses,
// into one allocation: for a command kept past its read (handled again
// after a step, or by a job off the event loop). Each argument of the copy
// has no spare capacity, as the reader's.
func (c Command) Clone() Command {
	n := len(c.Raw)
	for _, a := range c.Args {
		n += len(a)
	}
	buf := make([]byte, 0, n)
	buf = append(buf, c.Raw...)
	d := Command{Raw: buf[:len(c.Raw):len(c.Raw)], Args: make([][]byte, len(c.Args))}
	for i, a := range c.Args {
		at := len(buf)
		buf = append(buf, a...)
		d.Args[i] = buf[at:len(buf):len(buf)]
	}
	return d
}
