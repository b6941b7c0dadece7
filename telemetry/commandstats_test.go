package telemetry

import (
	"testing"
	"time"
)

func TestErrorCode(t *testing.T) {
	for _, c := range []struct {
		reply string
		want  string // "" for no error
	}{
		{"+OK\r\n", ""},
		{"$3\r\n-ab\r\n", ""},
		{":1\r\n", ""},
		{"-ERR unknown command 'FOO'\r\n", "ERR"},
		{"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", "WRONGTYPE"},
		{"-NOTOWNER lock:a is held by another owner\r\n", "NOTOWNER"},
		{"-ERR\r\n", "ERR"},
		{"-SOMETHINGNEW text\r\n", "other"},
		{"-err lower case is another word\r\n", "other"},
		{"!21\r\nSYNTAX invalid syntax\r\n", "other"},
		{"!24\r\nNOSCRIPT no such script\r\n", "NOSCRIPT"},
		{"-", ""},
	} {
		got := ""
		if i := ErrorCode([]byte(c.reply)); i >= 0 {
			got = ErrorCodes[i]
		}
		if got != c.want {
			t.Errorf("ErrorCode(%q) = %q, want %q", c.reply, got, c.want)
		}
	}
	if ErrorCodes[CodeOther] != "other" {
		t.Errorf("CodeOther names %q", ErrorCodes[CodeOther])
	}
	if n := testing.AllocsPerRun(100, func() { ErrorCode([]byte("-WRONGTYPE x\r\n")) }); n != 0 {
		t.Errorf("ErrorCode allocates %v times", n)
	}
}

func TestCommandStats(t *testing.T) {
	c := NewCommandStats(3)
	c.Count(1)
	c.Count(1)
	c.Count(2)
	c.Observe(1, int64(200*time.Microsecond), -1)
	c.Observe(1, int64(3*time.Millisecond), 1) // WRONGTYPE
	c.Observe(2, -5, CodeOther)
	if c.Total(0) != 0 || c.Total(1) != 2 || c.Total(2) != 1 {
		t.Errorf("totals %d %d %d, want 0 2 1", c.Total(0), c.Total(1), c.Total(2))
	}
	if c.Errors(1, 1) != 1 || c.Errors(1, 0) != 0 || c.Errors(2, CodeOther) != 1 {
		t.Errorf("errors: WRONGTYPE %d ERR %d other %d, want 1 0 1", c.Errors(1, 1), c.Errors(1, 0), c.Errors(2, CodeOther))
	}
	h := c.Latency(1)
	if h.Count != 2 || h.Min != 0.0002 || h.Max != 0.003 || h.Sum != 0.0032 {
		t.Errorf("latency of label 1: count %d min %v max %v sum %v", h.Count, h.Min, h.Max, h.Sum)
	}
	// 200us falls in (100us, 250us], 3ms in (2.5ms, 5ms].
	if h.Buckets[1] != 1 || h.Buckets[5] != 1 {
		t.Errorf("buckets %v", h.Buckets)
	}
	if h := c.Latency(2); h.Count != 1 || h.Buckets[0] != 1 || h.Max != 0 {
		t.Errorf("a negative duration counts as 0: %+v", h)
	}
	if n := testing.AllocsPerRun(100, func() {
		c.Count(1)
		c.Observe(1, 12345, 3)
	}); n != 0 {
		t.Errorf("counting a command allocates %v times", n)
	}
}

// BenchmarkCommandStats is the per-command accounting a reply costs: the
// count at handling and the observation at the reply.
func BenchmarkCommandStats(b *testing.B) {
	c := NewCommandStats(250)
	reply := []byte("$5\r\nhello\r\n")
	b.ReportAllocs()
	for b.Loop() {
		c.Count(17)
		c.Observe(17, 150000, ErrorCode(reply))
	}
}
