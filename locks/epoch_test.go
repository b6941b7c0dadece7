package locks

import (
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/lockproxy/lockproxy/internal/valkeytest"
	"github.com/lockproxy/lockproxy/rewrite"
)

// The run id and the databases with keys are read from INFO server
// keyspace in RESP2 and RESP3 alike; an HMGET of the epoch hash is read
// when the hash is there, and not when it is not.
func TestParseEpochClues(t *testing.T) {
	const body = "# Server\r\nredis_version:7.2.4\r\nrun_id:8f3a0c\r\ntcp_port:6379\r\n\r\n# Keyspace\r\ndb0:keys=2,expires=0,avg_ttl=0\r\ndb9:keys=1,expires=0,avg_ttl=0\r\n"
	for _, reply := range []string{"$123\r\n" + body + "\r\n", "=127\r\ntxt:" + body + "\r\n"} {
		run, dbs, err := parseServerInfo([]byte(reply))
		if err != nil || run != "8f3a0c" || strings.Join(dbs, ",") != "0,9" {
			t.Errorf("%q: run %q, dbs %v, %v", reply[:6], run, dbs, err)
		}
	}
	if _, _, err := parseServerInfo([]byte("-NOPERM no\r\n")); err == nil {
		t.Error("an error read as INFO")
	}
	if e, run, ok := parseEpochHash([]byte("*2\r\n$1\r\n5\r\n$6\r\n8f3a0c\r\n")); !ok || e != 5 || run != "8f3a0c" {
		t.Errorf("hash: %d %q %v", e, run, ok)
	}
	for _, none := range []string{"*2\r\n$-1\r\n$-1\r\n", "*2\r\n_\r\n_\r\n", "-WRONGTYPE x\r\n"} {
		if _, _, ok := parseEpochHash([]byte(none)); ok {
			t.Errorf("%q read as a hash", none)
		}
	}
}

// Learn reads the run id and the epoch hashes on a new connection: the
// clue is the highest epoch of another run, and the epoch minted under is
// above it. A restart without persistence (a new run id, the data gone)
// does not make it forget the epochs seen in tokens on the old run.
func TestLearnAcrossRestart(t *testing.T) {
	srv := valkeytest.Start(t)
	c := valkeytest.Dial(t, srv.Addr, 2)
	run, _, err := parseServerInfo(c.Do(t, "INFO", "server"))
	if err != nil {
		t.Fatal(err)
	}
	c.Do(t, "HSET", rewrite.EpochKey, "epoch", "5", "run", run)
	c.Do(t, "SELECT", "2")
	c.Do(t, "HSET", rewrite.EpochKey, "epoch", "9", "run", "0123abcd")
	k := newTestKeeper(&testHost{}, &sync.WaitGroup{})
	learn := func() {
		t.Helper()
		nc, err := net.Dial("tcp", srv.Addr)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		if err := k.Learn(nc, 0); err != nil {
			t.Fatal(err)
		}
	}
	learn()
	if known, e := string(k.Clue.Known()), k.CurrentEpoch(); known != "9" || e != 10 {
		t.Fatalf("known %s, current epoch %d; want 9, 10", known, e)
	}
	k.sawToken(12<<rewrite.EpochShift | 1)
	srv.Restart(t)
	learn()
	if known, e := string(k.Clue.Known()), k.CurrentEpoch(); known != "12" || e != 13 {
		t.Fatalf("after the restart: known %s, current epoch %d; want 12, 13", known, e)
	}
}

// In front of a cluster the clue rises above every epoch in use.
func TestRaiseClusterEpoch(t *testing.T) {
	k := newTestKeeper(&testHost{}, &sync.WaitGroup{})
	k.sawToken(700 << rewrite.EpochShift)
	for _, tc := range []struct {
		top  int64
		want string
	}{{2, "700"}, {3, "768"}, {1, "769"}} {
		k.RaiseClusterEpoch(tc.top)
		if got := string(k.Clue.Known()); got != tc.want {
			t.Errorf("RaiseClusterEpoch(%d): known %s, want %s", tc.top, got, tc.want)
		}
	}
}
