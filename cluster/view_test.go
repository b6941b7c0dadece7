package cluster

import (
	"bufio"
	"bytes"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockproxy/lockproxy/internal/valkeytest"
	"github.com/lockproxy/lockproxy/resp"
)

// testHost asks the nodes on a new connection per call (RESP2, no login),
// and words its errors plainly: what the proxy's Host does, without its
// connection cache and catalogue.
func testHost(t *testing.T, wg *sync.WaitGroup) Host {
	return Host{
		WG:  wg,
		Log: slog.New(slog.NewTextHandler(&testWriter{t}, nil)),
		Do: func(addr string, proto int, login string, cmds ...[]byte) ([][]byte, error) {
			if proto != 2 || login != "" {
				return nil, fmt.Errorf("test host: proto %d, login %q", proto, login)
			}
			nc, err := net.DialTimeout("tcp", addr, time.Second)
			if err != nil {
				return nil, err
			}
			defer nc.Close()
			_ = nc.SetDeadline(time.Now().Add(5 * time.Second))
			if _, err := nc.Write(bytes.Join(cmds, nil)); err != nil {
				return nil, err
			}
			br := bufio.NewReader(nc)
			out := make([][]byte, len(cmds))
			for i := range cmds {
				var b bytes.Buffer
				if err := valkeytest.ReadReply(br, &b); err != nil {
					return nil, err
				}
				out[i] = b.Bytes()
			}
			return out, nil
		},
		TLS:           func() bool { return false },
		LostText:      func(addr string, err error) string { return "LOST " + addr },
		NoMapText:     func(err error) string { return fmt.Sprintf("NOMAP %v", err) },
		DownText:      func(slot uint16) string { return fmt.Sprintf("DOWN %d", slot) },
		RedirectsText: func(n int) string { return fmt.Sprintf("REDIRECTS %d", n) },
		OwnMovedText:  func(to string) string { return "OWNMOVED " + to },
	}
}

type testWriter struct{ t *testing.T }

func (w *testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(b)))
	return len(b), nil
}

// A view of a real cluster reads a map that covers every slot, and keeps
// it (a second read that finds the same map changes nothing).
func TestViewReadsTheMap(t *testing.T) {
	cl := valkeytest.SharedCluster(t)
	var wg sync.WaitGroup
	v := NewView(testHost(t, &wg), cl.Seeds(), time.Hour)
	v.Start()
	defer func() { v.Stop(); wg.Wait() }()
	m := v.Map()
	if m == nil || m.Covered() != SlotCount || len(m.Primaries) != 3 || v.Err() != nil {
		t.Fatalf("map %v, err %v", m, v.Err())
	}
	v.Refresh()
	if v.Map() != m || v.Stats.Refreshes.Load() != 1 {
		t.Errorf("a read of the same map replaced it (refreshes %d)", v.Stats.Refreshes.Load())
	}
	if p, c := v.Size(); p != 3 || c != SlotCount {
		t.Errorf("Size = %d, %d", p, c)
	}
	for id := range uint64(3) {
		if n := v.KeylessNode(id); n != m.Primaries[id] || !v.IsPrimary(n) {
			t.Errorf("KeylessNode(%d) = %s", id, n)
		}
	}
}

// With no node reachable there is no map, and a command that needs one
// gets the host's text with the reason.
func TestViewNoMap(t *testing.T) {
	var wg sync.WaitGroup
	v := NewView(testHost(t, &wg), []string{"127.0.0.1:1"}, time.Hour)
	v.Refresh()
	if v.Map() != nil || v.Err() == nil {
		t.Fatalf("map %v, err %v", v.Map(), v.Err())
	}
	if r := string(v.NoMap()); !strings.HasPrefix(r, "-NOMAP ") || !strings.Contains(r, "127.0.0.1:1") {
		t.Errorf("NoMap = %q", r)
	}
	if a, err := v.AnyNode(); a != "127.0.0.1:1" || err != nil {
		t.Errorf("AnyNode = %q, %v", a, err)
	}
	if got := string(v.RunSplit(nil, SplitSum, 2, "", 0)); !strings.HasPrefix(got, "-NOMAP") {
		t.Errorf("RunSplit without a map = %q", got)
	}
}

// A command sent to a node that does not serve its slot gets MOVED there;
// Follow takes it to the slot's primary and returns that node's reply. On
// a client's own connection it is not followed.
func TestFollowMoved(t *testing.T) {
	cl := valkeytest.SharedCluster(t)
	var wg sync.WaitGroup
	v := NewView(testHost(t, &wg), cl.Seeds(), time.Hour)
	v.Refresh()
	m := v.Map()
	key := "follow-test-key"
	at, _ := m.Primary(Slot([]byte(key)))
	wrong := m.Primaries[0]
	if wrong == at {
		wrong = m.Primaries[1]
	}
	set := resp.AppendCommandStrings(nil, "SET", key, "v1")
	if r, err := v.host.Do(at, 2, "", set); err != nil || string(r[0]) != "+OK\r\n" {
		t.Fatalf("SET: %q, %v", r, err)
	}
	get := resp.AppendCommandStrings(nil, "GET", key)
	r, err := v.host.Do(wrong, 2, "", get)
	if err != nil || !bytes.HasPrefix(r[0], []byte("-MOVED ")) {
		t.Fatalf("GET at the wrong node: %q, %v", r, err)
	}
	if got := string(v.Follow(&Cmd{Raw: get, Proto: 2}, r[0], wrong)); got != "$2\r\nv1\r\n" {
		t.Errorf("Follow = %q", got)
	}
	if got := string(v.Follow(&Cmd{Proto: 2, Own: true}, r[0], wrong)); got != "-OWNMOVED "+at+"\r\n" {
		t.Errorf("Follow on an own connection = %q", got)
	}
	if v.Stats.Moved.Load() != 2 {
		t.Errorf("moved %d", v.Stats.Moved.Load())
	}
	if got := string(v.Follow(&Cmd{Raw: get, Proto: 2}, []byte("-ERR x\r\n"), wrong)); got != "-ERR x\r\n" {
		t.Errorf("another error: %q", got)
	}
}

// A command split by slot runs each part on its slot's primary: MSET,
// then MGET in the keys' order, then DEL's counts added up.
func TestRunSplit(t *testing.T) {
	cl := valkeytest.SharedCluster(t)
	var wg sync.WaitGroup
	v := NewView(testHost(t, &wg), cl.Seeds(), time.Hour)
	v.Refresh()
	keys := []string{"{s1}k", "{s2}k", "{s3}k", "{s1}j"}
	mset := []string{"MSET"}
	mget := []string{"MGET"}
	var at []int
	for i, k := range keys {
		mset = append(mset, k, "v"+k)
		mget = append(mget, k)
		at = append(at, 1+2*i)
	}
	if got := string(v.RunSplit(Split(args(mset...), at, SplitMSet), SplitMSet, 2, "", len(keys))); got != "+OK\r\n" {
		t.Fatalf("MSET = %q", got)
	}
	if len(Split(args(mset...), at, SplitMSet)) < 2 {
		t.Fatal("the keys are in one slot: nothing split")
	}
	got := v.RunSplit(Split(args(mget...), []int{1, 2, 3, 4}, SplitMGet), SplitMGet, 2, "", len(keys))
	if want := bulks("v{s1}k", "v{s2}k", "v{s3}k", "v{s1}j"); !bytes.Equal(got, want) {
		t.Errorf("MGET = %q, want %q", got, want)
	}
	del := args("DEL", "{s1}k", "{s2}k", "{s3}k", "{s1}j", "{s9}none")
	if got := string(v.RunSplit(Split(del, []int{1, 2, 3, 4, 5}, SplitSum), SplitSum, 2, "", 5)); got != ":4\r\n" {
		t.Errorf("DEL = %q", got)
	}
}

// INFO's Keyspace section summed over the primaries counts every key the
// primaries hold; the other sections are the named node's.
func TestSumInfo(t *testing.T) {
	cl := valkeytest.SharedCluster(t)
	var wg sync.WaitGroup
	v := NewView(testHost(t, &wg), cl.Seeds(), time.Hour)
	v.Refresh()
	m := v.Map()
	for _, k := range []string{"{i1}a", "{i2}a", "{i3}a", "{i4}a"} {
		at, _ := m.Primary(Slot([]byte(k)))
		if _, err := v.host.Do(at, 2, "", resp.AppendCommandStrings(nil, "SET", k, "v")); err != nil {
			t.Fatal(err)
		}
	}
	var want int64
	for _, p := range m.Primaries {
		r, err := v.host.Do(p, 2, "", resp.AppendCommandStrings(nil, "DBSIZE"))
		if err != nil {
			t.Fatal(err)
		}
		n, _ := resp.ReplyInt(r[0])
		want += n
	}
	node := m.Primaries[2]
	out, ok := v.SumInfo(m, resp.AppendCommandStrings(nil, "INFO", "server", "keyspace"), 2, "", node)
	if !ok {
		t.Fatalf("SumInfo: %q", out)
	}
	_, port, _ := net.SplitHostPort(node)
	if !strings.Contains(string(out), fmt.Sprintf("db0:keys=%d,", want)) || !strings.Contains(string(out), "tcp_port:"+port+"\r\n") {
		t.Errorf("SumInfo = %q; want db0:keys=%d and the server section of %s", out, want, node)
	}
	// A node's error is the client's, as it is.
	if out, ok := v.SumInfo(m, resp.AppendCommandStrings(nil, "INFOX"), 2, "", node); ok || !strings.HasPrefix(string(out), "-ERR unknown command") {
		t.Errorf("SumInfo of an unknown command = %q, %v", out, ok)
	}
	for _, p := range m.Primaries {
		_, _ = v.host.Do(p, 2, "", resp.AppendCommandStrings(nil, "DEL", "{i1}a", "{i2}a", "{i3}a", "{i4}a"))
	}
}

func TestTopEpoch(t *testing.T) {
	cl := valkeytest.SharedCluster(t)
	var wg sync.WaitGroup
	v := NewView(testHost(t, &wg), cl.Seeds(), time.Hour)
	v.Refresh()
	if e := v.TopEpoch(v.Map().Primaries, 2, "", nil); e < 0 {
		t.Errorf("TopEpoch of the primaries = %d", e)
	}
	if e := v.TopEpoch([]string{"127.0.0.1:1"}, 2, "", nil); e != -1 {
		t.Errorf("TopEpoch of no node answering = %d", e)
	}
	infos := [][]byte{[]byte("cluster_my_epoch:4\r\n"), []byte("-ERR x\r\n"), []byte("cluster_my_epoch:9\r\n")}
	if e := v.TopEpoch(nil, 2, "", infos); e != 9 {
		t.Errorf("TopEpoch(infos) = %d", e)
	}
}

// A fan-out folds the primaries' replies; a flush has its epoch raised
// before it is sent and once every primary answered; a node not reached
// makes the host's text the reply.
func TestFanOut(t *testing.T) {
	cl := valkeytest.SharedCluster(t)
	var wg sync.WaitGroup
	v := NewView(testHost(t, &wg), cl.Seeds(), time.Hour)
	v.Refresh()
	m := v.Map()
	for _, k := range []string{"{f1}a", "{f2}a", "{f3}a"} {
		at, _ := m.Primary(Slot([]byte(k)))
		if _, err := v.host.Do(at, 2, "", resp.AppendCommandStrings(nil, "SET", k, "v")); err != nil {
			t.Fatal(err)
		}
	}
	out, ok := v.FanOut(m.Primaries, resp.AppendCommandStrings(nil, "DBSIZE"), FoldSum, 2, "", nil)
	if n, isInt := resp.ReplyInt(out); !ok || !isInt || n < 3 {
		t.Errorf("DBSIZE = %q, %v", out, ok)
	}
	var tops []int64
	out, ok = v.FanOut(m.Primaries, resp.AppendCommandStrings(nil, "FLUSHDB"), FoldAllOK, 2, "", func(top int64) { tops = append(tops, top) })
	if !ok || string(out) != "+OK\r\n" || len(tops) != 2 || tops[0] < 0 || tops[1] != tops[0] {
		t.Errorf("FLUSHDB = %q, %v; epochs raised to %v", out, ok, tops)
	}
	out, _ = v.FanOut(m.Primaries, resp.AppendCommandStrings(nil, "DBSIZE"), FoldSum, 2, "", nil)
	if string(out) != ":0\r\n" {
		t.Errorf("DBSIZE after FLUSHDB = %q", out)
	}
	tops = nil
	out, ok = v.FanOut([]string{m.Primaries[0], "127.0.0.1:1"}, resp.AppendCommandStrings(nil, "FLUSHDB"), FoldAllOK, 2, "", func(top int64) { tops = append(tops, top) })
	if ok || string(out) != "-LOST 127.0.0.1:1\r\n" || len(tops) != 2 {
		t.Errorf("a node not reached: %q, %v; epochs raised to %v", out, ok, tops)
	}
}
