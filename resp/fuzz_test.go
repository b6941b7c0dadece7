package resp

import (
	"bytes"
	"math/rand/v2"
	"reflect"
	"testing"
)

// fuzzLimits are small so the fuzzer reaches every limit with short inputs.
var fuzzLimits = Limits{MaxBulkLen: 300, MaxQueryBuffer: 2000, MaxInlineLen: 100, MaxArgs: 50}

func FuzzReadCommand(f *testing.F) {
	f.Add([]byte("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n*1\r\n$4\r\nPING\r\n"))
	f.Add([]byte("SET a \"b\\x41 c\" 'd\\'e'\r\nPING\n\r\n*0\r\n"))
	f.Add([]byte("*1\rX$4\r\nPINGxx*-1\r\n*2\r\n$1\r\na\r\n$-1\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		want := readAll(NewReader(bytes.NewReader(data), fuzzLimits))
		// However the bytes arrive, the outcome is the same.
		if got := readAll(NewReader(&oneByteReader{data: data}, fuzzLimits)); !reflect.DeepEqual(got, want) {
			t.Fatalf("one byte at a time:\n got %q\nwant %q", got, want)
		}
		seed := uint64(len(data))
		for _, b := range data {
			seed = seed*31 + uint64(b)
		}
		cr := &chunkReader{data: data, rng: rand.New(rand.NewPCG(seed, 1)), max: 1 + int(seed%64)}
		if got := readAll(NewReader(cr, fuzzLimits)); !reflect.DeepEqual(got, want) {
			t.Fatalf("random chunks:\n got %q\nwant %q", got, want)
		}
		for _, res := range want {
			if res.err != "" {
				break
			}
			if len(res.args) == 0 {
				t.Fatal("empty command returned")
			}
			enc := AppendCommand(nil, res.args...)
			// Raw is either the bytes received (multibulk) or the
			// encoding of the arguments (inline).
			if !bytes.Equal(res.raw, enc) && !bytes.Contains(data, res.raw) {
				t.Fatalf("raw %q is neither received bytes nor the encoding %q", res.raw, enc)
			}
			// Re-encoding round-trips, and so does the forwarded Raw.
			for _, b := range [][]byte{enc, res.raw} {
				again := readAll(NewReader(bytes.NewReader(b), Limits{}))
				if len(again) != 2 || !reflect.DeepEqual(again[0].args, res.args) || again[1].err != "EOF" {
					t.Fatalf("%q re-read as %q, want %q", b, again, res.args)
				}
			}
		}
	})
}

func FuzzFrame(f *testing.F) {
	for _, c := range replyCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		whole, werr := frameWhole(data)
		grown, gerr := frameGrowing(data)
		if werr != gerr || !equalInts(whole, grown) {
			t.Fatalf("whole %v %v, byte by byte %v %v", whole, werr, grown, gerr)
		}
		rest := data
		for _, n := range whole {
			_, pn, err := Parse(rest)
			if err != nil || pn != n {
				t.Fatalf("Parse used %d, %v; Framer said %d", pn, err, n)
			}
			rest = rest[n:]
		}
	})
}

func FuzzParse(f *testing.F) {
	for _, c := range replyCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, n, err := Parse(data)
		var fr Framer
		fn, ferr := fr.Frame(data)
		if n != fn || (err == nil) != (ferr == nil) {
			t.Fatalf("Parse %d %v, Frame %d %v", n, err, fn, ferr)
		}
		if n == 0 {
			return
		}
		enc := AppendValue(nil, v)
		v2, n2, err := Parse(enc)
		if err != nil || n2 != len(enc) || !reflect.DeepEqual(v, v2) {
			t.Fatalf("%q re-encoded as %q: %+v vs %+v (%v)", data[:n], enc, v, v2, err)
		}
	})
}
