package resp

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

func readStrings(t *testing.T, input string, lim Limits) ([][]string, string) {
	t.Helper()
	var cmds [][]string
	for _, res := range readAll(NewReader(strings.NewReader(input), lim)) {
		if res.err != "" {
			return cmds, res.err
		}
		cmds = append(cmds, strs(res.args))
	}
	return cmds, ""
}

func TestReadCommand(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want [][]string
		err  string // after the commands; "EOF" for a clean end
	}{
		{"multibulk", "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nhello\r\n", [][]string{{"SET", "k", "hello"}}, "EOF"},
		{"pipelined", "*1\r\n$4\r\nPING\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n", [][]string{{"PING"}, {"GET", "k"}}, "EOF"},
		{"empty bulk", "*2\r\n$4\r\nECHO\r\n$0\r\n\r\n", [][]string{{"ECHO", ""}}, "EOF"},
		{"binary bulk", "*2\r\n$4\r\nECHO\r\n$4\r\n\r\n\x00\xff\r\n", [][]string{{"ECHO", "\r\n\x00\xff"}}, "EOF"},
		{"empty commands skipped", "*0\r\n*-1\r\n*-7\r\n\r\n\n  \r\n*1\r\n$4\r\nPING\r\n", [][]string{{"PING"}}, "EOF"},
		{"inline", "PING\r\n", [][]string{{"PING"}}, "EOF"},
		{"inline lone LF", "PING\nECHO a\n", [][]string{{"PING"}, {"ECHO", "a"}}, "EOF"},
		{"inline quotes", "SET a \"b c\"\r\n", [][]string{{"SET", "a", "b c"}}, "EOF"},
		{"inline then multibulk", "PING\r\n*1\r\n$4\r\nPING\r\n", [][]string{{"PING"}, {"PING"}}, "EOF"},
		// Valkey skips the byte after '\r' and the two after a bulk unseen.
		{"lenient terminators", "*1\rX$4\r\nPINGxx", [][]string{{"PING"}}, "EOF"},
		{"partial multibulk", "*2\r\n$3\r\nGET\r\n", nil, io.ErrUnexpectedEOF.Error()},
		{"partial inline", "PING", nil, io.ErrUnexpectedEOF.Error()},
		{"max int args announced", "*2147483647\r\n", nil, io.ErrUnexpectedEOF.Error()},
		{"bulk at limit", "*1\r\n$536870912\r\n", nil, io.ErrUnexpectedEOF.Error()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readStrings(t, tt.in, Limits{})
			if !reflect.DeepEqual(got, tt.want) || err != tt.err {
				t.Fatalf("got %q, %q; want %q, %q", got, err, tt.want, tt.err)
			}
		})
	}
}

// protocolErrorCases are inputs Valkey rejects, with Valkey's reply text
// (without "ERR "). The differential test replays them against Valkey.
var protocolErrorCases = []struct {
	name string
	in   string
	err  string
}{
	{"mbulk not a number", "*abc\r\n", "Protocol error: invalid multibulk length"},
	{"mbulk plus sign", "*+1\r\n", "Protocol error: invalid multibulk length"},
	{"mbulk leading zero", "*01\r\n", "Protocol error: invalid multibulk length"},
	{"mbulk minus zero", "*-0\r\n", "Protocol error: invalid multibulk length"},
	{"mbulk empty", "*\r\n", "Protocol error: invalid multibulk length"},
	{"mbulk space", "*1 \r\n", "Protocol error: invalid multibulk length"},
	{"mbulk over INT_MAX", "*2147483648\r\n", "Protocol error: invalid multibulk length"},
	{"mbulk overflow", "*99999999999999999999\r\n", "Protocol error: invalid multibulk length"},
	{"bulk negative", "*1\r\n$-1\r\n", "Protocol error: invalid bulk length"},
	{"bulk not a number", "*1\r\n$x\r\n", "Protocol error: invalid bulk length"},
	{"bulk empty", "*1\r\n$\r\n", "Protocol error: invalid bulk length"},
	{"bulk leading zero", "*1\r\n$01\r\nx\r\n", "Protocol error: invalid bulk length"},
	{"bulk over proto-max-bulk-len", "*1\r\n$536870913\r\n", "Protocol error: invalid bulk length"},
	{"bulk second arg", "*2\r\n$4\r\nECHO\r\n$1x\r\n", "Protocol error: invalid bulk length"},
	{"expected dollar", "*1\r\n:1\r\n", "Protocol error: expected '$', got ':'"},
	{"expected dollar CR", "*1\r\n\r\n", "Protocol error: expected '$', got ' '"},
	{"expected dollar after arg", "*2\r\n$4\r\nECHO\r\n*1\r\n", "Protocol error: expected '$', got '*'"},
	{"too big mbulk count", "*" + strings.Repeat("1", 65537), "Protocol error: too big mbulk count string"},
	{"too big mbulk count with CR", "*" + strings.Repeat("1", 65537) + "\r\n", "Protocol error: too big mbulk count string"},
	{"mbulk count at limit", "*" + strings.Repeat("0", 65535) + "\r\n", "Protocol error: invalid multibulk length"},
	{"too big bulk count", "*1\r\n$" + strings.Repeat("1", 65537), "Protocol error: too big bulk count string"},
	{"too big bulk count no dollar", "*1\r\n" + strings.Repeat("x", 65537), "Protocol error: too big bulk count string"},
	{"bulk count at limit", "*1\r\n$" + strings.Repeat("0", 65535) + "\r\n", "Protocol error: invalid bulk length"},
	{"too big inline", strings.Repeat("a", 65537), "Protocol error: too big inline request"},
	{"too big inline with LF", strings.Repeat("a", 65537) + "\n", "Protocol error: too big inline request"},
	{"unbalanced double", "SET a \"b\r\n", "Protocol error: unbalanced quotes in request"},
	{"unbalanced single", "SET a 'b\r\n", "Protocol error: unbalanced quotes in request"},
	{"quote then text", "SET a \"b\"c\r\n", "Protocol error: unbalanced quotes in request"},
	{"single quote then text", "SET a 'b'c\r\n", "Protocol error: unbalanced quotes in request"},
	{"escaped closing quote", "ECHO \"a\\\"\r\n", "Protocol error: unbalanced quotes in request"},
	{"escaped closing single quote", "ECHO 'a\\'\n", "Protocol error: unbalanced quotes in request"},
	{"error after good command", "PING\r\n*x\r\n", "Protocol error: invalid multibulk length"},
}

func TestReadCommandErrors(t *testing.T) {
	for _, tt := range protocolErrorCases {
		t.Run(tt.name, func(t *testing.T) {
			for _, mode := range []string{"whole", "bytes"} {
				var rd io.Reader = strings.NewReader(tt.in)
				if mode == "bytes" && len(tt.in) < 1000 {
					rd = &oneByteReader{data: []byte(tt.in)}
				}
				r := NewReader(rd, Limits{})
				var err error
				for err == nil {
					_, err = r.ReadCommand()
				}
				var pe *ProtocolError
				if !errors.As(err, &pe) || pe.Msg != tt.err {
					t.Fatalf("%s: got %v, want %q", mode, err, tt.err)
				}
				// The error is sticky: the stream is beyond repair.
				if _, err2 := r.ReadCommand(); err2 != err {
					t.Fatalf("second call: %v", err2)
				}
			}
		})
	}
}

func TestInlineLineLimitBoundary(t *testing.T) {
	// A line of exactly MaxInlineLen bytes is fine, one more is not,
	// however the bytes arrive.
	ok := "ECHO " + strings.Repeat("a", 65536-5) + "\n"
	for _, rd := range []io.Reader{strings.NewReader(ok), &oneByteReader{data: []byte(ok)}} {
		r := NewReader(rd, Limits{})
		cmd, err := r.ReadCommand()
		if err != nil || len(cmd.Args) != 2 || len(cmd.Args[1]) != 65531 {
			t.Fatalf("got %d args, %v", len(cmd.Args), err)
		}
	}
	bad := "ECHO " + strings.Repeat("a", 65536-4) + "\n"
	if _, err := NewReader(strings.NewReader(bad), Limits{}).ReadCommand(); err != errTooBigInline {
		t.Fatalf("got %v", err)
	}
}

func TestAuthRequiredLimits(t *testing.T) {
	r := NewReader(strings.NewReader("*11\r\n"), Limits{})
	r.SetAuthRequired(true)
	if _, err := r.ReadCommand(); err == nil || err.Error() != "Protocol error: unauthenticated multibulk length" {
		t.Fatalf("got %v", err)
	}
	r = NewReader(strings.NewReader("*2\r\n$4\r\nAUTH\r\n$16385\r\n"), Limits{})
	r.SetAuthRequired(true)
	if _, err := r.ReadCommand(); err == nil || err.Error() != "Protocol error: unauthenticated bulk length" {
		t.Fatalf("got %v", err)
	}
	in := string(AppendCommandStrings(nil, "AUTH", strings.Repeat("p", 16384)))
	r = NewReader(strings.NewReader(in+in), Limits{})
	r.SetAuthRequired(true)
	if _, err := r.ReadCommand(); err != nil {
		t.Fatal(err)
	}
	r.SetAuthRequired(false)
	if _, err := r.ReadCommand(); err != nil {
		t.Fatal(err)
	}
}

func TestInlineSplit(t *testing.T) {
	tests := []struct {
		line string
		want []string // nil: unbalanced quotes
	}{
		{`SET a "b c"`, []string{"SET", "a", "b c"}},
		{`  PING   `, []string{"PING"}},
		{"a\tb", []string{"a", "b"}},
		{`""`, []string{""}},
		{`"" ''`, []string{"", ""}},
		{`"\x41\x4a\x4A"`, []string{"AJJ"}},
		{`"\x4"`, []string{"x4"}},
		{`"\x4g"`, []string{"x4g"}},
		{`"\n\r\t\b\a\z\\\""`, []string{"\n\r\t\b\azz"[:6] + "\\\""}},
		{`'a\'b'`, []string{"a'b"}},
		{`'a\nb'`, []string{`a\nb`}},
		{`'a\\'`, nil}, // the second backslash escapes the closing quote
		{`a"b c"`, []string{"ab c"}},
		{`a'b c'd`, nil},
		{`a'b c' d`, []string{"ab c", "d"}},
		{`"a"b`, nil},
		{`"a`, nil},
		{`'a`, nil},
		{`"a\"`, nil},
		{`"a\`, nil},
		{"a\vb", []string{"a\vb"}},
		{"\v\fa", []string{"a"}},
		{"a\rb", []string{"a", "b"}},
		{"\"a\"\rb", []string{"a", "b"}},
		{"\"a\"\vb", []string{"a", "b"}},
		{"\xff\x80", []string{"\xff\x80"}},
		{"", []string{}},
		{"   ", []string{}},
	}
	for _, tt := range tests {
		dst, ends, ok := splitInline([]byte(tt.line), nil, nil)
		if tt.want == nil {
			if ok {
				t.Errorf("%q: want unbalanced quotes, got ok", tt.line)
			}
			continue
		}
		if !ok {
			t.Errorf("%q: unexpected unbalanced quotes", tt.line)
			continue
		}
		got := []string{}
		prev := 0
		for _, e := range ends {
			got = append(got, string(dst[prev:e]))
			prev = e
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%q: got %q, want %q", tt.line, got, tt.want)
		}
	}
}

func TestInlineNUL(t *testing.T) {
	// sdssplitargs reads a C string: the line ends at the first NUL.
	got, err := readStrings(t, "PI\x00NG\r\n\x00PING\r\nECHO \"a\x00\r\n", Limits{})
	if !reflect.DeepEqual(got, [][]string{{"PI"}}) || err != "Protocol error: unbalanced quotes in request" {
		t.Fatalf("got %q, %q", got, err)
	}
}

func TestInlineRaw(t *testing.T) {
	r := NewReader(strings.NewReader("SET a \"b c\"\r\nPING\r\n"), Limits{})
	cmd, err := r.ReadCommand()
	if err != nil {
		t.Fatal(err)
	}
	if want := "*3\r\n$3\r\nSET\r\n$1\r\na\r\n$3\r\nb c\r\n"; string(cmd.Raw) != want {
		t.Fatalf("raw %q, want %q", cmd.Raw, want)
	}
	for _, a := range cmd.Args {
		if cap(a) != len(a) {
			t.Fatalf("arg %q has spare capacity %d: appends would clobber Raw", a, cap(a))
		}
	}
	if cmd, _ = r.ReadCommand(); string(cmd.Raw) != "*1\r\n$4\r\nPING\r\n" {
		t.Fatalf("raw %q", cmd.Raw)
	}
}

func TestMultibulkRawIsExact(t *testing.T) {
	in := "*2\r\n$4\r\nECHO\r\n$3\r\nabc\r\n*1\rZ$4\r\nPINGzz"
	r := NewReader(strings.NewReader(in), Limits{})
	c1, _ := r.ReadCommand()
	if string(c1.Raw) != in[:23] || cap(c1.Raw) != len(c1.Raw) {
		t.Fatalf("raw %q", c1.Raw)
	}
	c2, _ := r.ReadCommand()
	if string(c2.Raw) != in[23:] {
		t.Fatalf("raw %q", c2.Raw)
	}
}

// stream builds a mixed stream that exercises every parse path.
func stream(rng *rand.Rand, n int) []byte {
	var b []byte
	for i := range n {
		switch rng.IntN(6) {
		case 0:
			b = AppendCommandStrings(b, "SET", "key:"+strings.Repeat("k", rng.IntN(20)), strings.Repeat("v", rng.IntN(3000)))
		case 1:
			b = AppendCommandStrings(b, "GET", "k")
		case 2:
			b = append(b, "SET a \"b \\x41 c\" 'd e'\r\n"...)
		case 3:
			b = append(b, "*0\r\n\r\n"...)
		case 4:
			args := make([][]byte, 1+rng.IntN(50))
			for j := range args {
				args[j] = bytes.Repeat([]byte{byte('a' + j%26)}, rng.IntN(40))
			}
			b = AppendCommand(b, args...)
		case 5:
			b = AppendCommandStrings(b, "SET", "big", strings.Repeat("x", 17000+i))
		}
	}
	return b
}

func TestSplitReads(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	data := stream(rng, 150)
	want := readAll(NewReader(bytes.NewReader(data), Limits{}))
	if len(want) < 120 || want[len(want)-1].err != "EOF" {
		t.Fatalf("baseline: %d results, last %q", len(want), want[len(want)-1].err)
	}
	got := readAll(NewReader(&oneByteReader{data: data}, Limits{}))
	if !reflect.DeepEqual(got, want) {
		t.Fatal("one byte at a time differs from whole")
	}
	for seed := range uint64(20) {
		cr := &chunkReader{data: data, rng: rand.New(rand.NewPCG(seed, 7)), max: 1 + int(seed)*500}
		if got := readAll(NewReader(cr, Limits{})); !reflect.DeepEqual(got, want) {
			t.Fatalf("seed %d: chunked read differs from whole", seed)
		}
	}
}

func TestBeforeFill(t *testing.T) {
	data := AppendCommandStrings(nil, "PING")
	r := NewReader(&oneByteReader{data: data}, Limits{})
	fills := 0
	r.SetBeforeFill(func() { fills++ })
	if _, err := r.ReadCommand(); err != nil {
		t.Fatal(err)
	}
	if fills != len(data) {
		t.Fatalf("BeforeFill ran %d times for %d reads", fills, len(data))
	}
	if _, err := r.ReadCommand(); err != io.EOF || fills != len(data)+1 {
		t.Fatalf("err %v, fills %d", err, fills)
	}
}

func TestBuffered(t *testing.T) {
	r := NewReader(strings.NewReader("PING\r\n*1\r\n$4\r\nPING\r\n*1\r\n"), Limits{})
	if _, err := r.ReadCommand(); err != nil || r.Buffered() != 18 {
		t.Fatalf("err %v buffered %d", err, r.Buffered())
	}
	if _, err := r.ReadCommand(); err != nil || r.Buffered() != 4 {
		t.Fatalf("err %v buffered %d", err, r.Buffered())
	}
}

type errAfter struct {
	data []byte
	err  error
}

func (e *errAfter) Read(p []byte) (int, error) {
	n := copy(p, e.data)
	e.data = e.data[n:]
	if len(e.data) == 0 {
		return n, e.err
	}
	return n, nil
}

func TestReadErrors(t *testing.T) {
	boom := errors.New("boom")
	// Data returned along with an error is parsed before the error shows.
	r := NewReader(&errAfter{data: []byte("PING\r\nPING\r\n"), err: boom}, Limits{})
	for range 2 {
		if _, err := r.ReadCommand(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.ReadCommand(); err != boom {
		t.Fatalf("got %v", err)
	}
	// A read error is not sticky: parsing resumes after, e.g., a timeout.
	timeout := errors.New("timeout")
	src := &errAfter{data: []byte("*1\r\n$4\r\nPI"), err: timeout}
	r = NewReader(src, Limits{})
	if _, err := r.ReadCommand(); err != timeout {
		t.Fatalf("got %v", err)
	}
	src.data, src.err = []byte("NG\r\n"), nil
	if cmd, err := r.ReadCommand(); err != nil || string(cmd.Args[0]) != "PING" {
		t.Fatalf("got %q, %v", cmd.Args, err)
	}
}

type zeroReader struct{}

func (zeroReader) Read([]byte) (int, error) { return 0, nil }

func TestNoProgress(t *testing.T) {
	if _, err := NewReader(zeroReader{}, Limits{}).ReadCommand(); err != io.ErrNoProgress {
		t.Fatalf("got %v", err)
	}
}

// limitedSource yields n bytes of filler after a prefix, then EOF.
type limitedSource struct {
	prefix []byte
	n      int
	fill   byte
	reads  int
}

func (l *limitedSource) Read(p []byte) (int, error) {
	l.reads++
	if len(l.prefix) > 0 {
		k := copy(p, l.prefix)
		l.prefix = l.prefix[k:]
		return k, nil
	}
	if l.n == 0 {
		return 0, io.EOF
	}
	k := min(len(p), l.n, 4096)
	for i := range k {
		p[i] = l.fill
	}
	l.n -= k
	return k, nil
}

func TestTrickleDoesNotPreallocate(t *testing.T) {
	// A client announces a 2 GB bulk and sends 1 MiB of it: the buffer must
	// follow the bytes received, not the announcement.
	lim := Limits{MaxBulkLen: 4 << 30, MaxQueryBuffer: 8 << 30}
	src := &limitedSource{prefix: []byte("*2\r\n$3\r\nSET\r\n$2000000000\r\n"), n: 1 << 20, fill: 'x'}
	r := NewReader(src, lim)
	if _, err := r.ReadCommand(); err != io.ErrUnexpectedEOF {
		t.Fatalf("got %v", err)
	}
	if c := cap(r.buf); c > 4<<20 || c < 1<<20 {
		t.Fatalf("buffer capacity %d after 1 MiB received", c)
	}
	// Likewise for an announced argument count.
	src = &limitedSource{prefix: []byte("*2000000000\r\n"), n: 1 << 20}
	var args []byte
	for len(args) < 1<<20 {
		args = append(args, "$1\r\na\r\n"...)
	}
	src.prefix = append(src.prefix, args...)
	src.n = 0
	r = NewReader(src, lim)
	if _, err := r.ReadCommand(); err != io.ErrUnexpectedEOF {
		t.Fatalf("got %v", err)
	}
	if c := cap(r.args); c > 2*(len(args)/7) {
		t.Fatalf("args capacity %d for %d args received", c, len(args)/7)
	}
	if c := cap(r.buf); c > 4<<20 {
		t.Fatalf("buffer capacity %d", c)
	}
}

func TestQueryBufferLimit(t *testing.T) {
	lim := Limits{MaxQueryBuffer: 1000}
	small := AppendCommandStrings(nil, "SET", "k", strings.Repeat("v", 900))
	big := AppendCommandStrings(nil, "SET", "k", strings.Repeat("v", 1000))
	for _, mode := range []string{"whole", "bytes"} {
		mk := func(b []byte) io.Reader {
			if mode == "bytes" {
				return &oneByteReader{data: b}
			}
			return bytes.NewReader(b)
		}
		r := NewReader(mk(append(append([]byte{}, small...), big...)), lim)
		if _, err := r.ReadCommand(); err != nil {
			t.Fatalf("%s: small command: %v", mode, err)
		}
		if _, err := r.ReadCommand(); err != errQueryBufferLimit {
			t.Fatalf("%s: big command: %v", mode, err)
		}
		if cap(r.buf) > 16<<10 {
			t.Fatalf("%s: buffer grew to %d", mode, cap(r.buf))
		}
	}
	// An unfinished command is cut off as soon as it passes the limit.
	src := &limitedSource{prefix: []byte("*1\r\n$100000\r\n"), n: 100000, fill: 'x'}
	r := NewReader(src, Limits{MaxQueryBuffer: 20000})
	if _, err := r.ReadCommand(); err != errQueryBufferLimit {
		t.Fatalf("got %v", err)
	}
	if src.reads > 10 {
		t.Fatalf("%d reads before the limit hit", src.reads)
	}
}

func TestLargeValueAndShrink(t *testing.T) {
	if testing.Short() {
		t.Skip("64 MiB value")
	}
	val := bytes.Repeat([]byte("0123456789abcdef"), 4<<20) // 64 MiB
	cmd := AppendCommand(nil, []byte("SET"), []byte("big"), val)
	src := io.MultiReader(
		&chunkReader{data: cmd, rng: rand.New(rand.NewPCG(3, 4)), max: 256 << 10},
		strings.NewReader("PING\r\n"),
	)
	r := NewReader(src, Limits{})
	got, err := r.ReadCommand()
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Args) != 3 || !bytes.Equal(got.Args[2], val) || !bytes.Equal(got.Raw, cmd) {
		t.Fatalf("large value mangled: %d args", len(got.Args))
	}
	if c := cap(r.buf); c > 2*len(cmd) {
		t.Fatalf("buffer %d for a %d byte command", c, len(cmd))
	}
	got, err = r.ReadCommand()
	if err != nil || string(got.Args[0]) != "PING" {
		t.Fatalf("after large value: %q %v", got.Args, err)
	}
	if c := cap(r.buf); c != minBufSize {
		t.Fatalf("buffer not shrunk after large command: %d", c)
	}
	// Nothing else may pin the old buffer either.
	for _, a := range r.args[:cap(r.args)] {
		if cap(a) > minBufSize {
			t.Fatalf("args still reference a %d byte buffer", cap(a))
		}
	}
}

func TestArgsCapacityDropped(t *testing.T) {
	args := make([]string, 10000)
	for i := range args {
		args[i] = "a"
	}
	in := append(AppendCommandStrings(nil, args...), "PING\r\n"...)
	r := NewReader(bytes.NewReader(in), Limits{})
	if c, err := r.ReadCommand(); err != nil || len(c.Args) != 10000 {
		t.Fatalf("%d args, %v", len(c.Args), err)
	}
	if _, err := r.ReadCommand(); err != nil {
		t.Fatal(err)
	}
	if cap(r.args) > maxKeptArgs {
		t.Fatalf("args capacity %d kept", cap(r.args))
	}
}

func TestReset(t *testing.T) {
	r := NewReader(strings.NewReader("*1\r\n$4\r\nPI"), Limits{})
	if _, err := r.ReadCommand(); err != io.ErrUnexpectedEOF {
		t.Fatal(err)
	}
	r.Reset(strings.NewReader("PING\r\n"))
	if c, err := r.ReadCommand(); err != nil || string(c.Args[0]) != "PING" {
		t.Fatalf("%q %v", c.Args, err)
	}
}

// cycle replays the same bytes forever.
type cycle struct {
	data []byte
	off  int
}

func (c *cycle) Read(p []byte) (int, error) {
	n := copy(p, c.data[c.off:])
	c.off = (c.off + n) % len(c.data)
	return n, nil
}

func pipeline() []byte {
	var b []byte
	for i := range 100 {
		if i%2 == 0 {
			b = AppendCommandStrings(b, "SET", "key:000000000042", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx")
		} else {
			b = AppendCommandStrings(b, "GET", "key:000000000042")
		}
	}
	return b
}

func TestReadCommandDoesNotAllocate(t *testing.T) {
	r := NewReader(&cycle{data: pipeline()}, Limits{})
	for range 1000 { // warm up buffers
		if _, err := r.ReadCommand(); err != nil {
			t.Fatal(err)
		}
	}
	allocs := testing.AllocsPerRun(10000, func() {
		if _, err := r.ReadCommand(); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per command", allocs)
	}
	inline := NewReader(&cycle{data: []byte("SET key \"some value\"\r\nGET key\r\n")}, Limits{})
	for range 100 {
		inline.ReadCommand()
	}
	if allocs := testing.AllocsPerRun(1000, func() { inline.ReadCommand() }); allocs != 0 {
		t.Fatalf("%v allocations per inline command", allocs)
	}
}

func TestInlineSideBuffersDropped(t *testing.T) {
	line := "ECHO" + strings.Repeat(" a", 30000) + "\r\nPING\r\n"
	r := NewReader(strings.NewReader(line), Limits{})
	if c, err := r.ReadCommand(); err != nil || len(c.Args) != 30001 {
		t.Fatalf("%d args, %v", len(c.Args), err)
	}
	if _, err := r.ReadCommand(); err != nil {
		t.Fatal(err)
	}
	if cap(r.inl) > shrinkAbove || cap(r.ends) > maxKeptArgs || cap(r.args) > maxKeptArgs {
		t.Fatalf("side buffers kept: inl %d ends %d args %d", cap(r.inl), cap(r.ends), cap(r.args))
	}
}

// SetSource switches streams without losing what was buffered, whichever
// parser produced the commands (the multibulk fast path, the incremental
// one, an inline line), even when the bytes arrived one at a time.
func TestSetSource(t *testing.T) {
	in := "*2\r\n$3\r\nGET\r\n$1\r\na\r\nPING x\r\n*1\r\n$4\r\nPING\r\n"
	want := []string{"GET a", "PING x", "PING"}
	for _, name := range []string{"whole", "bytewise"} {
		var src io.Reader = strings.NewReader(in)
		if name == "bytewise" {
			src = &oneByteReader{data: []byte(in)}
		}
		r := NewReader(src, Limits{})
		for i, w := range want {
			cmd, err := r.ReadCommand()
			if err != nil {
				t.Fatalf("%s: command %d: %v", name, i, err)
			}
			if got := string(bytes.Join(cmd.Args, []byte(" "))); got != w {
				t.Fatalf("%s: command %d: got %q, want %q", name, i, got, w)
			}
		}
		r.SetSource(strings.NewReader("*1\r\n$4\r\nQUIT\r\n"))
		cmd, err := r.ReadCommand()
		if err != nil || string(cmd.Args[0]) != "QUIT" {
			t.Fatalf("%s: after SetSource: %q %v", name, cmd.Args, err)
		}
	}
}
