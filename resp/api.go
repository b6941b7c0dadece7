package resp

// API contract (to be implemented in this package; this file lists the
// exported surface the proxy core compiles against — keep these names and
// signatures, move them into files by concept, and delete this comment block).
//
//	type Limits struct {
//		MaxBulkLen     int64 // proto-max-bulk-len: largest bulk a client may send (default 512 MiB)
//		MaxQueryBuffer int64 // client-query-buffer-limit: most bytes of one unfinished command held (default 1 GiB)
//		MaxInlineLen   int   // longest inline command line (default 64 KiB, Valkey's PROTO_INLINE_MAX_SIZE)
//		MaxArgs        int64 // most arguments in one command (default 1024*1024*1024 ... see Valkey's limit)
//	}
//	func DefaultLimits() Limits
//
//	// Command is one client command. Args and Raw alias the Reader's buffer and
//	// stay valid only until the next ReadCommand.
//	type Command struct {
//		Args [][]byte // the arguments; Args[0] is the command name as sent
//		Raw  []byte   // RESP encoding to forward: the exact bytes received for a
//		              // multibulk command; a fresh RESP array for an inline one
//	}
//
//	type Reader struct{ ... }
//	func NewReader(rd io.Reader, lim Limits) *Reader
//	// BeforeFill, when set, is called each time the Reader is about to call
//	// rd.Read (i.e. it may block): the proxy flushes queued work there.
//	func (r *Reader) SetBeforeFill(f func())
//	// ReadCommand returns the next command; empty commands (*0, blank lines) are skipped.
//	// Malformed input → *ProtocolError (Error() is Valkey's text without "ERR ", e.g.
//	// "Protocol error: invalid bulk length"); after it the stream is unusable.
//	func (r *Reader) ReadCommand() (Command, error)
//	func (r *Reader) Buffered() int
//
//	type ProtocolError struct{ Msg string }
//
//	// Framer finds reply boundaries in a stream of RESP2/RESP3 replies.
//	type Framer struct{ ... }
//	// Frame reports the length of the first complete reply at the start of buf
//	// (an attribute '|' and the reply it annotates count as one), or 0 when buf
//	// holds only part of it. Calls with a growing buf that starts at the same
//	// reply resume where the last scan stopped (no rescanning: a 1e6-element
//	// array arriving in 1,000 pieces costs O(n), not O(n²)). After it returns
//	// n > 0 the caller drops buf[:n] and the Framer starts afresh.
//	func (f *Framer) Frame(buf []byte) (int, error)
//
//	func AppendCommand(dst []byte, args ...[]byte) []byte  // *N\r\n$len\r\narg\r\n...
//	func AppendCommandStrings(dst []byte, args ...string) []byte
//	func AppendError(dst []byte, msg string) []byte       // -msg\r\n (CR/LF in msg replaced by spaces)
//	func AppendSimple(dst []byte, s string) []byte        // +s\r\n
//	func AppendInt(dst []byte, n int64) []byte
//	func AppendBulk(dst []byte, b []byte) []byte
//	func AppendNull(dst []byte, proto int) []byte          // $-1 (RESP2) or _ (RESP3)
//	func AppendArrayHeader(dst []byte, n int) []byte
//	func AppendMapHeader(dst []byte, n int, proto int) []byte // %n (RESP3) or *2n (RESP2)
//
//	// Value is a decoded reply, for the few replies the proxy inspects and for tests.
//	type Value struct {
//		Type  byte    // the RESP type byte: + - : $ * _ , # ! = ( % ~ > |
//		Str   []byte  // simple/bulk/error/verbatim/double/bignum text
//		Int   int64
//		Null  bool
//		Elems []Value // arrays, sets, pushes; maps as k1,v1,k2,v2...
//		Attrs []Value // attribute pairs preceding the value, if any
//	}
//	func Parse(b []byte) (Value, int, error) // decode the first reply in b; n bytes used; 0,nil if incomplete
