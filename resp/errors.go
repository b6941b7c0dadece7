package resp

// ProtocolError reports input that can not be parsed. For client commands
// Msg is Valkey's own wording without the "ERR " prefix, so the proxy can
// answer "-ERR "+Msg exactly as Valkey would before closing the connection.
// After a ProtocolError the stream position is lost: the caller must close.
type ProtocolError struct{ Msg string }

func (e *ProtocolError) Error() string { return e.Msg }

// Errors with a fixed text are shared values: the error path of a
// connection being torn down need not allocate, and tests can compare them.
var (
	errInvalidMultibulkLen = &ProtocolError{"Protocol error: invalid multibulk length"}
	errInvalidBulkLen      = &ProtocolError{"Protocol error: invalid bulk length"}
	errTooBigInline        = &ProtocolError{"Protocol error: too big inline request"}
	errTooBigMbulkCount    = &ProtocolError{"Protocol error: too big mbulk count string"}
	errTooBigBulkCount     = &ProtocolError{"Protocol error: too big bulk count string"}
	errUnbalancedQuotes    = &ProtocolError{"Protocol error: unbalanced quotes in request"}
	errUnauthMultibulkLen  = &ProtocolError{"Protocol error: unauthenticated multibulk length"}
	errUnauthBulkLen       = &ProtocolError{"Protocol error: unauthenticated bulk length"}
	// Valkey has no reply for this case (it logs and drops the client), so the
	// text is ours; it keeps the "Protocol error: " prefix for uniformity.
	errQueryBufferLimit = &ProtocolError{"Protocol error: query buffer limit exceeded"}

	// Reply framing errors: replies come from the upstream server, never from
	// a client, so these texts are only for the proxy's logs.
	errBadType     = &ProtocolError{"Protocol error: invalid reply type byte"}
	errBadLineEnd  = &ProtocolError{"Protocol error: reply line not terminated by CRLF"}
	errBadLength   = &ProtocolError{"Protocol error: invalid length in reply"}
	errBadInteger  = &ProtocolError{"Protocol error: invalid integer in reply"}
	errBadBulkEnd  = &ProtocolError{"Protocol error: bulk reply not terminated by CRLF"}
	errBadNull     = &ProtocolError{"Protocol error: invalid null reply"}
	errBadBool     = &ProtocolError{"Protocol error: invalid boolean reply"}
	errBadDouble   = &ProtocolError{"Protocol error: invalid double reply"}
	errBadVerbatim = &ProtocolError{"Protocol error: invalid verbatim string reply"}
	errStreamed    = &ProtocolError{"Protocol error: streamed RESP3 strings and aggregates are not supported"}
	errTooDeep     = &ProtocolError{"Protocol error: reply nested too deeply"}
)

// expectedDollar builds Valkey's "expected '$', got 'X'" text. Valkey formats
// it with addReplyErrorFormat, which turns CR and LF into spaces so the error
// line stays one line; we do the same.
func expectedDollar(c byte) *ProtocolError {
	if c == '\r' || c == '\n' {
		c = ' '
	}
	return &ProtocolError{"Protocol error: expected '$', got '" + string([]byte{c}) + "'"}
}
