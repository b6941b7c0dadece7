package resp

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// replyCases covers every RESP2 and RESP3 type, nested.
var replyCases = []string{
	"+OK\r\n",
	"+\r\n",
	"-ERR unknown command 'x'\r\n",
	":0\r\n",
	":-9223372036854775808\r\n",
	":+12\r\n",
	"$5\r\nhello\r\n",
	"$0\r\n\r\n",
	"$-1\r\n",
	"$4\r\n\r\n\r\n\r\n",
	"*-1\r\n",
	"*0\r\n",
	"*3\r\n:1\r\n$1\r\na\r\n*1\r\n+x\r\n",
	"*2\r\n*-1\r\n$-1\r\n",
	"_\r\n",
	",3.14\r\n",
	",-inf\r\n",
	",nan\r\n",
	",1e+300\r\n",
	"#t\r\n",
	"#f\r\n",
	"!21\r\nSYNTAX invalid syntax\r\n",
	"=15\r\ntxt:Some string\r\n",
	"(3492890328409238509324850943850943825024385\r\n",
	"(-1\r\n",
	"(123  123\r\n", // a script's big number, as Valkey passes it on
	"%2\r\n+first\r\n:1\r\n+second\r\n%1\r\n~2\r\n:1\r\n:2\r\n>1\r\n_\r\n",
	"%0\r\n",
	"~3\r\n+a\r\n+b\r\n#t\r\n",
	">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$5\r\nhello\r\n",
	"|1\r\n+key-popularity\r\n%2\r\n$1\r\na\r\n,0.1923\r\n$1\r\nb\r\n,0.0012\r\n*2\r\n:2039123\r\n:9543892\r\n",
	"|0\r\n+OK\r\n",
	"*2\r\n|1\r\n+ttl\r\n:3600\r\n$1\r\nv\r\n:2\r\n",
	"|1\r\n+a\r\n|1\r\n+b\r\n+c\r\n:1\r\n+d\r\n",
	"%1\r\n|1\r\n+k\r\n+v\r\n+key\r\n~0\r\n",
	">2\r\n+invalidate\r\n*1\r\n$3\r\nfoo\r\n",
}

// frameGrowing feeds a growing prefix of data to one Framer, a byte at a
// time, and returns the frame lengths found (or the error).
func frameGrowing(data []byte) ([]int, error) {
	var f Framer
	var out []int
	start := 0
	for end := start + 1; end <= len(data); end++ {
		n, err := f.Frame(data[start:end])
		if err != nil {
			return out, err
		}
		if n > 0 {
			if start+n != end {
				// A frame can only complete at the byte that completes it.
				return out, &ProtocolError{"frame ended early"}
			}
			out = append(out, n)
			start = end
		}
	}
	return out, nil
}

// frameSteps is frameGrowing with prefixes growing by 1 to max bytes.
func frameSteps(data []byte, rng *rand.Rand, max int) ([]int, error) {
	var f Framer
	var out []int
	start, end := 0, 0
	for end < len(data) {
		end = min(end+1+rng.IntN(max), len(data))
		for {
			n, err := f.Frame(data[start:end])
			if err != nil {
				return out, err
			}
			if n == 0 {
				break
			}
			out = append(out, n)
			start += n
		}
	}
	return out, nil
}

// frameWhole splits data into frames in one pass over the whole buffer.
func frameWhole(data []byte) ([]int, error) {
	var f Framer
	var out []int
	for len(data) > 0 {
		n, err := f.Frame(data)
		if err != nil || n == 0 {
			return out, err
		}
		out = append(out, n)
		data = data[n:]
	}
	return out, nil
}

func TestFrameAllTypes(t *testing.T) {
	var all []byte
	var want []int
	for _, c := range replyCases {
		var f Framer
		if n, err := f.Frame([]byte(c)); n != len(c) || err != nil {
			t.Errorf("%q: got %d, %v; want %d", c, n, err, len(c))
		}
		// Every strict prefix is incomplete, never an error.
		for i := 0; i < len(c); i++ {
			var f Framer
			if n, err := f.Frame([]byte(c[:i])); n != 0 || err != nil {
				t.Errorf("%q[:%d]: got %d, %v", c, i, n, err)
			}
		}
		all = append(all, c...)
		want = append(want, len(c))
	}
	got, err := frameWhole(all)
	if err != nil || !equalInts(got, want) {
		t.Fatalf("whole: %v %v", got, err)
	}
	got, err = frameGrowing(all)
	if err != nil || !equalInts(got, want) {
		t.Fatalf("byte by byte: %v %v", got, err)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestFrameErrors(t *testing.T) {
	tests := []struct {
		in  string
		err error
	}{
		{"?x\r\n", errBadType},
		{"\r\n", errBadType},
		{";3\r\nabc\r\n", errBadType},
		{"+OK\rX", errBadLineEnd},
		{":abc\r\n", errBadInteger},
		{":\r\n", errBadInteger},
		{":9223372036854775808\r\n", errBadInteger},
		{"$-2\r\n", errBadLength},
		{"$x\r\n", errBadLength},
		{"$\r\n", errBadLength},
		{"$3\r\nabcde", errBadBulkEnd},
		{"$" + strings.Repeat("1", 30), errBadLength},
		{"*" + strings.Repeat("1", 17) + "\r\n", errBadLength},
		{"$?\r\n;4\r\nHell\r\n;0\r\n", errStreamed},
		{"*?\r\n", errStreamed},
		{"%-1\r\n", errBadLength},
		{"~-1\r\n", errBadLength},
		{"!-1\r\n", errBadLength},
		{"_x\r\n", errBadNull},
		{"#x\r\n", errBadBool},
		{"#\r\n", errBadBool},
		{",\r\n", errBadDouble},
		{",1;2\r\n", errBadDouble},
		{"=3\r\ntxt\r\n", errBadVerbatim},
		{"=5\r\ntxt!a\r\n", errBadVerbatim},
		{"*2\r\n:1\r\n%x\r\n", errBadLength},
	}
	for _, tt := range tests {
		var f Framer
		if _, err := f.Frame([]byte(tt.in)); err != tt.err {
			t.Errorf("%q: got %v, want %v", tt.in, err, tt.err)
		}
		if _, err := frameGrowing([]byte(tt.in)); err != tt.err {
			t.Errorf("%q byte by byte: got %v, want %v", tt.in, err, tt.err)
		}
	}
}

func TestFrameDepth(t *testing.T) {
	deep := func(levels int) []byte {
		b := bytes.Repeat([]byte("*1\r\n"), levels)
		return append(b, ":1\r\n"...)
	}
	ok := deep(maxDepth)
	var f Framer
	if n, err := f.Frame(ok); n != len(ok) || err != nil {
		t.Fatalf("depth %d: %d %v", maxDepth, n, err)
	}
	if _, err := f.Frame(deep(maxDepth + 1)); err != errTooDeep {
		t.Fatalf("depth %d: %v", maxDepth+1, err)
	}
	// Parse and AppendValue must cope with the deepest valid reply too.
	v, n, err := Parse(ok)
	if err != nil || n != len(ok) {
		t.Fatalf("Parse: %d %v", n, err)
	}
	if enc := AppendValue(nil, v); !bytes.Equal(enc, ok) {
		t.Fatal("AppendValue of a deep value differs")
	}
	// Attributes nest as well.
	attrs := append(bytes.Repeat([]byte("|1\r\n+k\r\n"), maxDepth+1), "+v\r\n"...)
	if _, err := f.Frame(attrs); err != errTooDeep {
		t.Fatalf("deep attributes: %v", err)
	}
}

// TestFrameResumeIsLinear feeds large replies in small pieces and checks
// that after each call the Framer's resume point is at the end of what it
// was given (less at most one unfinished token or bulk header): a Framer
// that rescanned from the start would be O(n²) over such a stream.
func TestFrameResumeIsLinear(t *testing.T) {
	var arr []byte
	arr = AppendArrayHeader(arr, 200_000)
	for i := range 200_000 {
		arr = AppendInt(arr, int64(i))
	}
	long := append(append([]byte{'+'}, bytes.Repeat([]byte("x"), 4<<20)...), '\r', '\n')
	bulk := AppendBulk(nil, bytes.Repeat([]byte("y"), 4<<20))
	for _, data := range [][]byte{arr, long, bulk} {
		// Backstop for rescans the state checks below can not see: the
		// array takes milliseconds linearly and minutes quadratically.
		start := time.Now()
		var f Framer
		piece := len(data) / 4000
		for end := piece; ; end += piece {
			end = min(end, len(data))
			n, err := f.Frame(data[:end])
			if err != nil {
				t.Fatal(err)
			}
			if n > 0 {
				if n != len(data) || end != len(data) {
					t.Fatalf("frame %d of %d at %d", n, len(data), end)
				}
				if d := time.Since(start); d > 10*time.Second {
					t.Fatalf("%d bytes in 4000 pieces took %v", len(data), d)
				}
				break
			}
			// Only the token at f.pos is unfinished, and its line has been
			// searched up to f.scan; a bulk body is never searched at all.
			if data[f.pos] == '$' {
				if f.pos != 0 {
					t.Fatalf("bulk header moved to %d", f.pos)
				}
			} else if end-f.pos > 12 && f.scan < end-1 {
				t.Fatalf("at %d of %d: resumes at %d, searched to %d", end, len(data), f.pos, f.scan)
			}
		}
	}
}

func TestFrameShorterBufferRestarts(t *testing.T) {
	var f Framer
	if n, _ := f.Frame([]byte("*2\r\n:1\r\n:")); n != 0 {
		t.Fatal(n)
	}
	// The caller moved on to a different, shorter buffer.
	if n, err := f.Frame([]byte("+OK\r\n")); n != 5 || err != nil {
		t.Fatalf("%d %v", n, err)
	}
}

func TestFrameDoesNotAllocate(t *testing.T) {
	data := []byte("+OK\r\n$5\r\nhello\r\n:42\r\n*2\r\n$1\r\na\r\n$1\r\nb\r\n")
	var f Framer
	allocs := testing.AllocsPerRun(1000, func() {
		if _, err := frameWhole2(&f, data); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations", allocs)
	}
}

func frameWhole2(f *Framer, data []byte) (int, error) {
	frames := 0
	for len(data) > 0 {
		n, err := f.Frame(data)
		if err != nil || n == 0 {
			return frames, err
		}
		frames++
		data = data[n:]
	}
	return frames, nil
}
