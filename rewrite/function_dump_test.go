package rewrite

import "testing"

// Valkey's crc64 (crc64.c's test): "123456789" gives 0xe9c6d914c4b8d9ca.
func TestCRC64Jones(t *testing.T) {
	if got := crc64Jones([]byte("123456789")); got != 0xe9c6d914c4b8d9ca {
		t.Fatalf("crc64Jones = %#x", got)
	}
}

// A payload written by dumpPayload reads back as the libraries it holds,
// whatever their lengths (each RDB length form); a checksum made wrong on
// purpose reads as wrong; a cut or altered payload is refused, never a
// panic.
func TestDumpPayloadRoundTrip(t *testing.T) {
	libs := []string{"", "#!lua name=a\nx", string(make([]byte, 100)), string(make([]byte, 20000)), string(make([]byte, 70000))}
	p := dumpPayload(libs, []byte{11, 0}, false)
	got, ver, ok, err := dumpLibraries(p)
	if err != nil || !ok || len(got) != len(libs) || string(ver) != "\x0b\x00" {
		t.Fatalf("dumpLibraries: %v %v %d %q", err, ok, len(got), ver)
	}
	for i := range libs {
		if got[i] != libs[i] {
			t.Errorf("library %d: %d bytes, want %d", i, len(got[i]), len(libs[i]))
		}
	}
	if _, _, ok, _ := dumpLibraries(dumpPayload(libs, []byte{11, 0}, true)); ok {
		t.Error("a wrong checksum read as right")
	}
	for n := 0; n < len(p); n += 997 {
		dumpLibraries(p[:n])
		q := append([]byte(nil), p...)
		q[n] ^= 0xff
		dumpLibraries(q)
	}
}

// LZF as liblzf writes it: literal runs and back references, including
// one that overlaps what it copies; malformed input is an error.
func TestLZFDecompress(t *testing.T) {
	// "abcabcabcabc": a literal run of 3, then a reference 3 back, length 9.
	in := []byte{2, 'a', 'b', 'c', 7<<5 | 0, 0, 2}
	out, err := lzfDecompress(in, 12)
	if err != nil || string(out) != "abcabcabcabc" {
		t.Fatalf("got %q %v", out, err)
	}
	for _, bad := range [][]byte{{2, 'a'}, {1<<5 | 0, 5}, {0, 'a', 1 << 5}} {
		if _, err := lzfDecompress(bad, 12); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
	if _, err := lzfDecompress(in, 11); err == nil {
		t.Error("output longer than said: no error")
	}
}
