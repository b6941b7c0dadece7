package telemetry

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestSlowLogRing(t *testing.T) {
	var out syncBuf
	l := NewSlowLog(slog.New(slog.NewTextHandler(&out, nil)), 10*time.Millisecond, 3)
	if l.Slow(int64(9*time.Millisecond)) || !l.Slow(int64(10*time.Millisecond)) {
		t.Error("the threshold is inclusive: 10ms is slow, 9ms is not")
	}
	for i := range 5 {
		l.Add(Slow{Command: "get", Keys: 1, Args: 1, ClientID: uint64(i), Addr: "127.0.0.1:5", Duration: time.Duration(i) * time.Second})
	}
	got := l.Recent(-1)
	if len(got) != 3 || got[0].ID != 4 || got[2].ID != 2 || got[0].ClientID != 4 {
		t.Fatalf("newest 3, newest first, IDs 4 3 2: %+v", got)
	}
	if r := l.Recent(1); len(r) != 1 || r[0].ID != 4 {
		t.Errorf("Recent(1) = %+v", r)
	}
	if l.Len() != 3 || l.Total() != 5 {
		t.Errorf("Len %d Total %d, want 3 5", l.Len(), l.Total())
	}
	l.Set(10*time.Millisecond, 2) // shorter: keeps the newest
	if r := l.Recent(-1); len(r) != 2 || r[0].ID != 4 || r[1].ID != 3 {
		t.Errorf("after shrinking to 2: %+v", r)
	}
	l.Reset()
	if l.Len() != 0 || l.Total() != 5 {
		t.Errorf("after RESET: Len %d Total %d, want 0 5", l.Len(), l.Total())
	}
	l.Add(Slow{Command: "set", Keys: 1, Args: 2})
	if r := l.Recent(-1); len(r) != 1 || r[0].ID != 5 {
		t.Errorf("IDs go on rising after RESET, as Valkey's do: %+v", r)
	}
	l.Set(-1, 2)
	if l.Slow(int64(time.Hour)) {
		t.Error("a negative threshold logs nothing")
	}
	l.Close()
	if s := out.String(); strings.Count(s, "slow command") != 6 || !strings.Contains(s, "command=set keys=1 args=2") {
		t.Errorf("log lines:\n%s", s)
	}
}
