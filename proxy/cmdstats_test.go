package proxy

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/lockproxy/lockproxy/commands"
	"github.com/lockproxy/lockproxy/internal/valkeytest"
	"github.com/lockproxy/lockproxy/keyspec"
	"github.com/lockproxy/lockproxy/rewrite"
	"github.com/lockproxy/lockproxy/telemetry"
	"github.com/redis/go-redis/v9"
)

// accountingSession is a session with only what the per-command
// accounting reads: the proxy's counters, its slow log (threshold
// slow) and a decider without a command table.
func accountingSession(t testing.TB, slow time.Duration) *session {
	o := &ops{perCmd: telemetry.NewCommandStats(commands.NumLabels),
		slow: telemetry.NewSlowLog(slog.New(slog.NewTextHandler(io.Discard, nil)), slow, 16)}
	t.Cleanup(o.slow.Close)
	p := &Proxy{ops: o}
	p.decider.Store(&rewrite.Decider{})
	return &session{p: p, id: 9, addr: "127.0.0.1:5000", keys: make([]keyspec.Key, 0, 8)}
}

// withTable gives s's proxy the command table of a real Valkey.
func withTable(t testing.TB, s *session) {
	srv := valkeytest.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, DisableIdentity: true})
	defer rdb.Close()
	tab, err := keyspec.Load(context.Background(), rdb)
	if err != nil {
		t.Fatal(err)
	}
	s.p.decider.Store(&rewrite.Decider{Table: tab})
}

func args(words ...string) [][]byte {
	out := make([][]byte, len(words))
	for i, w := range words {
		out[i] = []byte(w)
	}
	return out
}

// Each reply meets its own command's mark, in order, whether it comes
// alone, in a run with others (framed when one may be an error), muted,
// or with a push held behind it; errors count under their code word.
func TestAccountingPairsRepliesWithCommands(t *testing.T) {
	s := accountingSession(t, time.Hour)
	get, set, lpush := int(commands.LabelOf([]byte("get"))), int(commands.LabelOf([]byte("SET"))), int(commands.LabelOf([]byte("lpush")))
	wrongtype := telemetry.ErrorCode([]byte("-WRONGTYPE x\r\n"))
	for _, a := range [][][]byte{args("GET", "k"), args("SET", "k", "v"), args("LPUSH", "k", "x"), args("GET", "k"), args("SET", "k", "v")} {
		s.beginCommand(a)
		s.countCommand()
		s.queueMarks([]cmdMark{s.cur})
	}
	s.observeReplies([]byte("$1\r\nv\r\n+OK\r\n-WRONGTYPE Operation\r\n"), 3, s.cur.start+1000)
	s.observeReplies(nil, 1, s.cur.start+1000) // GET, muted
	s.observeReplies([]byte("+OK\r\n>2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nk\r\n"), 1, s.cur.start+1000)
	st := s.p.ops.perCmd
	if st.Total(get) != 2 || st.Total(set) != 2 || st.Total(lpush) != 1 {
		t.Errorf("totals get %d set %d lpush %d", st.Total(get), st.Total(set), st.Total(lpush))
	}
	if st.Errors(lpush, wrongtype) != 1 || st.Errors(set, wrongtype) != 0 || st.Errors(get, wrongtype) != 0 {
		t.Errorf("WRONGTYPE counted under the wrong command")
	}
	if st.Latency(get).Count != 1 || st.Latency(set).Count != 2 || st.Latency(lpush).Count != 1 {
		t.Errorf("timed: get %d (the muted one not), set %d, lpush %d", st.Latency(get).Count, st.Latency(set).Count, st.Latency(lpush).Count)
	}
	if s.marks.n != 0 {
		t.Errorf("%d marks left", s.marks.n)
	}
}

// A put-back command keeps the time its handling began; a protocol error
// is the unknown label's.
func TestAccountingResumedKeepsStart(t *testing.T) {
	s := accountingSession(t, time.Hour)
	s.beginCommand(args("GET", "k"))
	start := s.cur.start
	s.resumed = true
	s.beginCommand(args("GET", "k"))
	if s.cur.start != start || s.resumed {
		t.Errorf("start %d, want %d; resumed %v", s.cur.start, start, s.resumed)
	}
	s.protocolMark()
	if s.cur.label != commands.LabelUnknown {
		t.Errorf("protocol error's label %d", s.cur.label)
	}
}

// The accounting of a plain command allocates nothing, the slow log off or
// on (threshold 0: every command is copied into its ring and queued for
// its log line, written on the slow log's own goroutine), once the marks'
// ring has grown to the pipeline's depth.
func TestAccountingAllocatesNothing(t *testing.T) {
	for _, slow := range []time.Duration{time.Hour, 0} {
		s := accountingSession(t, slow)
		withTable(t, s) // the slow log counts keys by the table's specs
		a := args("MSET", "k1", "v1", "k2", "v2")
		reply := []byte("$1\r\nv\r\n")
		one := func() {
			s.beginCommand(a)
			s.countCommand()
			s.bmarks = append(s.bmarks[:0], s.cur)
			s.queueMarks(s.bmarks)
			s.observeReplies(reply, 1, s.cur.start+1000)
		}
		one() // the rings grow once
		if n := testing.AllocsPerRun(1000, one); n != 0 {
			t.Errorf("slow log threshold %v: %v allocations per command", slow, n)
		}
		if s.cur.keys != 2 {
			t.Errorf("MSET's keys counted %d, want 2", s.cur.keys)
		}
	}
}

// BenchmarkAccounting is what the per-command accounting adds to a plain
// command: the label lookup and count at handling, the mark queued, and
// the reply's observation (time, error code) on the output.
// The figure is per command of a pipeline of 16 (one read, one batch
// queued, one write of 16 replies, as make bench's P16 rows), with the
// slow log on (its keys counted by the table's specs) or off.
func BenchmarkAccounting(b *testing.B) {
	for _, slowOn := range []bool{true, false} {
		b.Run(fmt.Sprintf("slowlog=%v", slowOn), func(b *testing.B) {
			s := accountingSession(b, time.Hour)
			if !slowOn {
				s.p.ops.slow.Set(-1, 16)
			}
			withTable(b, s)
			a := args("GET", "k")
			reply := bytes.Repeat([]byte("$1\r\nv\r\n"), 16)
			b.ReportAllocs()
			for b.Loop() {
				s.readAt = 0 // a new read
				s.bmarks = s.bmarks[:0]
				for range 16 {
					s.beginCommand(a)
					s.countCommand()
					s.bmarks = append(s.bmarks, s.cur)
				}
				s.queueMarks(s.bmarks)
				s.observeReplies(reply, 16, s.cur.start+1000)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/16, "ns/command")
		})
	}
}
