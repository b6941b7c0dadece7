package resp

import (
	"bytes"
	"testing"
)

// BenchmarkReadCommand measures one small pipelined SET or GET, the proxy's
// common case. The pipeline is replayed from memory, so this is the parser
// alone, without syscalls.
func BenchmarkReadCommand(b *testing.B) {
	data := pipeline()
	r := NewReader(&cycle{data: data}, Limits{})
	b.SetBytes(int64(len(data) / 100))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.ReadCommand(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReadCommandInline(b *testing.B) {
	r := NewReader(&cycle{data: []byte("SET key:000000000042 \"some value\"\r\nGET key:000000000042\r\n")}, Limits{})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.ReadCommand(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFrame measures framing one small reply: status, bulk, integer,
// null and a short array, in turn.
func BenchmarkFrame(b *testing.B) {
	var data []byte
	data = append(data, "+OK\r\n"...)
	data = AppendBulkString(data, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx")
	data = AppendInt(data, 12345)
	data = append(data, "$-1\r\n"...)
	data = AppendCommandStrings(data, "a", "bb", "ccc")
	const replies = 5
	b.SetBytes(int64(len(data) / replies))
	b.ReportAllocs()
	var f Framer
	rest := data
	for b.Loop() {
		if len(rest) == 0 {
			rest = data
		}
		n, err := f.Frame(rest)
		if err != nil || n == 0 {
			b.Fatal(n, err)
		}
		rest = rest[n:]
	}
}

// BenchmarkFrameLarge measures framing a 1000-element array of bulks (an
// LRANGE or MGET reply).
func BenchmarkFrameLarge(b *testing.B) {
	args := make([][]byte, 1000)
	for i := range args {
		args[i] = bytes.Repeat([]byte{'v'}, 20)
	}
	data := AppendCommand(nil, args...)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	var f Framer
	for b.Loop() {
		if n, err := f.Frame(data); n != len(data) || err != nil {
			b.Fatal(n, err)
		}
	}
}

func BenchmarkParse(b *testing.B) {
	data := AppendCommandStrings(nil, "a", "bb", "ccc")
	b.ReportAllocs()
	for b.Loop() {
		if _, n, err := Parse(data); n == 0 || err != nil {
			b.Fatal(n, err)
		}
	}
}
