package valkeytest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Cluster is a real local Valkey Cluster: three primaries and one replica
// each, on free loopback ports, made by valkey-cli --cluster create. It is
// sized for a small machine (no persistence, one I/O thread, a short node
// timeout so a failover takes seconds); a test package starts one and
// shares it across its tests (Shared).
type Cluster struct {
	Nodes []*Server // the six nodes; which are primaries changes with failovers
	dir   string
}

// ClusterNodeTimeout is cluster-node-timeout of the test cluster: how long a
// node may be unreachable before the others fail it over.
const ClusterNodeTimeout = 2 * time.Second

// StartCluster starts a fresh cluster and waits until every node reports
// cluster_state:ok with all 16384 slots assigned. Stop it with Stop.
func StartCluster() (*Cluster, error) {
	if _, err := exec.LookPath("valkey-cli"); err != nil {
		return nil, fmt.Errorf("valkeytest: valkey-cli not found on PATH (install valkey-tools; see scripts/deps.sh): %v", err)
	}
	dir, err := os.MkdirTemp("", "lockproxy-cluster-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{dir: dir}
	for i := 0; i < 6; i++ {
		s, err := c.startNode(i)
		if err != nil {
			c.Stop()
			return nil, err
		}
		c.Nodes = append(c.Nodes, s)
	}
	args := []string{"--cluster", "create"}
	for _, s := range c.Nodes {
		args = append(args, s.Addr)
	}
	args = append(args, "--cluster-replicas", "1", "--cluster-yes")
	out, err := exec.Command("valkey-cli", args...).CombinedOutput()
	if err != nil {
		c.Stop()
		return nil, fmt.Errorf("valkeytest: valkey-cli --cluster create: %v\n%s", err, out)
	}
	if err := c.WaitOK(30 * time.Second); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

func (c *Cluster) startNode(i int) (*Server, error) {
	bin := Binary()
	if _, err := exec.LookPath(bin); err != nil {
		return nil, fmt.Errorf("valkeytest: %s not found on PATH: %v", bin, err)
	}
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		s := &Server{Bin: bin, Dir: fmt.Sprintf("%s/node%d-%d", c.dir, i, attempt)}
		if err := os.MkdirAll(s.Dir, 0o700); err != nil {
			return nil, err
		}
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		// The cluster bus listens on port+10000: it must be free too.
		if port+10000 > 65535 || !portFree(port+10000) {
			continue
		}
		s.Port = port
		s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		if lastErr = s.start([]string{
			"cluster-enabled yes",
			"cluster-config-file nodes.conf",
			"cluster-node-timeout " + strconv.Itoa(int(ClusterNodeTimeout/time.Millisecond)),
			"cluster-require-full-coverage yes",
			// A replica fails its stopped primary over however long
			// ago it last heard from it: on a loaded machine that age
			// can pass node-timeout × 10, and the slots would stay down.
			"cluster-replica-validity-factor 0",
			"io-threads 1",
			"maxmemory 64mb",
		}); lastErr == nil {
			return s, nil
		}
	}
	return nil, fmt.Errorf("valkeytest: cluster node %d did not start: %v", i, lastErr)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func portFree(port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

// Stop kills every node and removes their directories. Safe to call twice.
func (c *Cluster) Stop() {
	for _, s := range c.Nodes {
		s.Stop()
	}
	if c.dir != "" {
		os.RemoveAll(c.dir)
		c.dir = ""
	}
}

// Seeds returns every node's address, for upstream.cluster.seeds.
func (c *Cluster) Seeds() []string {
	out := make([]string, len(c.Nodes))
	for i, s := range c.Nodes {
		out[i] = s.Addr
	}
	return out
}

// WaitOK waits until every running node says cluster_state:ok and agrees
// with the others on which node serves each slot.
func (c *Cluster) WaitOK(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var why string
	for time.Now().Before(deadline) {
		why = c.notOK()
		if why == "" {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("valkeytest: cluster not ok after %s: %s", timeout, why)
}

func (c *Cluster) notOK() string {
	var first string
	for _, s := range c.Nodes {
		if s.cmd == nil {
			continue
		}
		info, err := Do(s.Addr, "CLUSTER", "INFO")
		if err != nil {
			return err.Error()
		}
		if !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, "cluster_slots_ok:16384") {
			return s.Addr + ": " + info
		}
		slots, err := Do(s.Addr, "CLUSTER", "SLOTS")
		if err != nil {
			return err.Error()
		}
		if first == "" {
			first = slots
		} else if slots != first {
			return s.Addr + " disagrees on CLUSTER SLOTS"
		}
	}
	return ""
}

// Primary returns the node serving slot now, as the first running node
// sees it (CLUSTER NODES).
func (c *Cluster) Primary(slot int) (*Server, error) {
	for _, s := range c.Nodes {
		if s.cmd == nil {
			continue
		}
		addr, err := slotOwner(s.Addr, slot)
		if err != nil {
			return nil, err
		}
		return c.ByAddr(addr), nil
	}
	return nil, errors.New("valkeytest: no cluster node runs")
}

// ByAddr returns the node listening on addr, or nil.
func (c *Cluster) ByAddr(addr string) *Server {
	for _, s := range c.Nodes {
		if s.Addr == addr {
			return s
		}
	}
	return nil
}

// Primaries returns the nodes that are primaries now.
func (c *Cluster) Primaries() ([]*Server, error) {
	var out []*Server
	for _, s := range c.Nodes {
		if s.cmd == nil {
			continue
		}
		role, err := Do(s.Addr, "ROLE")
		if err != nil {
			return nil, err
		}
		if strings.HasPrefix(role, "master\n") {
			out = append(out, s)
		}
	}
	return out, nil
}

// slotOwner reads CLUSTER NODES on addr and returns the primary of slot.
// A line is: id host:port@bus flags primary-id ping pong epoch state slots...
func slotOwner(addr string, slot int) (string, error) {
	out, err := Do(addr, "CLUSTER", "NODES")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 8 || !strings.Contains(f[2], "master") {
			continue
		}
		for _, r := range f[8:] {
			if strings.HasPrefix(r, "[") {
				continue // a slot being migrated or imported: not owned
			}
			lo, hi, _ := strings.Cut(r, "-")
			if hi == "" {
				hi = lo
			}
			a, _ := strconv.Atoi(lo)
			b, _ := strconv.Atoi(hi)
			if slot >= a && slot <= b {
				host, _, _ := strings.Cut(f[1], "@")
				return host, nil
			}
		}
	}
	return "", fmt.Errorf("valkeytest: slot %d has no owner in CLUSTER NODES of %s", slot, addr)
}

// Do sends one command to addr on a fresh connection and returns its reply
// flattened to text: simple strings, errors, numbers and bulk strings each
// on a line of their own (enough for INFO, ROLE, KEYSLOT in tests).
func Do(addr string, args ...string) (string, error) {
	nc, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return "", err
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := nc.Write(Command(args...)); err != nil {
		return "", err
	}
	var out bytes.Buffer
	if err := ReadReply(bufio.NewReader(nc), &out); err != nil {
		return "", err
	}
	return flatten(out.String()), nil
}

// flatten drops RESP framing: one line per scalar.
func flatten(r string) string {
	var b strings.Builder
	lines := strings.Split(r, "\r\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if l == "" {
			continue
		}
		switch l[0] {
		case '*', '%', '~':
			continue
		case '$':
			if l == "$-1" {
				b.WriteString("(nil)\n")
				continue
			}
			n, _ := strconv.Atoi(l[1:])
			// A bulk may contain CRLFs (INFO): take n bytes of what follows.
			rest := strings.Join(lines[i+1:], "\r\n")
			if n <= len(rest) {
				b.WriteString(rest[:n])
				b.WriteString("\n")
				consumed := strings.Count(rest[:n], "\r\n")
				i += consumed + 1
			}
		case '+', ':', '-':
			b.WriteString(l[1:])
			b.WriteString("\n")
		default:
			b.WriteString(l)
			b.WriteString("\n")
		}
	}
	return b.String()
}

var (
	sharedOnce sync.Once
	shared     *Cluster
	sharedErr  error
)

// SharedCluster returns the package run's one cluster, starting it on first
// use; the package's TestMain stops it with StopSharedCluster. Tests that
// change the topology (migrate a slot, fail a node over) must leave every
// slot served and the cluster ok again.
func SharedCluster(tb testing.TB) *Cluster {
	tb.Helper()
	sharedOnce.Do(func() { shared, sharedErr = StartCluster() })
	if sharedErr != nil {
		tb.Fatal(sharedErr)
	}
	if err := shared.WaitOK(30 * time.Second); err != nil {
		tb.Fatal(err)
	}
	return shared
}

// StopSharedCluster stops the shared cluster, if one was started.
func StopSharedCluster() {
	if shared != nil {
		shared.Stop()
	}
}

// MigrateSlot moves slot, and every key in it, from its primary to the
// primary dst, the way valkey-cli --cluster reshard does: IMPORTING on dst,
// MIGRATING on the source, MIGRATE of the keys in batches, then NODE on both
// and the others. between, when set, runs after the slot is marked
// migrating and before any key moves (to send traffic meanwhile) and again
// after each batch.
func (c *Cluster) MigrateSlot(slot int, dst *Server, between func()) error {
	src, err := c.Primary(slot)
	if err != nil {
		return err
	}
	if src == dst {
		return nil
	}
	srcID, err := NodeID(src)
	if err != nil {
		return err
	}
	dstID, err := NodeID(dst)
	if err != nil {
		return err
	}
	ss := strconv.Itoa(slot)
	steps := [][]string{
		{dst.Addr, "CLUSTER", "SETSLOT", ss, "IMPORTING", srcID},
		{src.Addr, "CLUSTER", "SETSLOT", ss, "MIGRATING", dstID},
	}
	for _, st := range steps {
		if out, err := Do(st[0], st[1:]...); err != nil || !strings.HasPrefix(out, "OK") {
			return fmt.Errorf("valkeytest: %q on %s: %q %v", st[1:], st[0], out, err)
		}
	}
	if between != nil {
		between()
	}
	host, port, _ := net.SplitHostPort(dst.Addr)
	for {
		out, err := Do(src.Addr, "CLUSTER", "GETKEYSINSLOT", ss, "10")
		if err != nil {
			return err
		}
		keys := strings.Fields(out)
		if len(keys) == 0 {
			break
		}
		args := append([]string{"MIGRATE", host, port, "", "0", "5000", "REPLACE", "KEYS"}, keys...)
		if out, err := Do(src.Addr, args...); err != nil || (!strings.HasPrefix(out, "OK") && !strings.HasPrefix(out, "NOKEY")) {
			return fmt.Errorf("valkeytest: MIGRATE %q: %q %v", keys, out, err)
		}
		if between != nil {
			between()
		}
	}
	for _, s := range []*Server{dst, src} {
		if out, err := Do(s.Addr, "CLUSTER", "SETSLOT", ss, "NODE", dstID); err != nil || !strings.HasPrefix(out, "OK") {
			return fmt.Errorf("valkeytest: SETSLOT NODE on %s: %q %v", s.Addr, out, err)
		}
	}
	// The other primaries learn it from the bus; tell them now so the
	// test does not wait for gossip.
	prims, err := c.Primaries()
	if err != nil {
		return err
	}
	for _, s := range prims {
		if s != dst && s != src {
			_, _ = Do(s.Addr, "CLUSTER", "SETSLOT", ss, "NODE", dstID)
		}
	}
	return c.WaitOK(30 * time.Second)
}

// ReplicaOf returns a replica of the primary p. It waits up to 30 s for one
// to be listed: after a failover (an earlier test's), the former primary
// shows as the new primary's replica only once it has learned of the
// failover.
func (c *Cluster) ReplicaOf(p *Server) (*Server, error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		r, err := c.replicaOf(p)
		if r != nil || err != nil || time.Now().After(deadline) {
			if r == nil && err == nil {
				err = fmt.Errorf("valkeytest: %s has no replica", p.Addr)
			}
			return r, err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// replicaOf is ReplicaOf's one look at CLUSTER NODES (nil, nil: none listed).
func (c *Cluster) replicaOf(p *Server) (*Server, error) {
	id, err := Do(p.Addr, "CLUSTER", "MYID")
	if err != nil {
		return nil, err
	}
	id = strings.TrimSpace(id)
	out, err := Do(p.Addr, "CLUSTER", "NODES")
	if err != nil {
		return nil, err
	}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) >= 4 && f[3] == id && strings.Contains(f[2], "slave") {
			host, _, _ := strings.Cut(f[1], "@")
			if s := c.ByAddr(host); s != nil {
				return s, nil
			}
		}
	}
	return nil, nil
}

// Failover makes replica its primary's successor with CLUSTER FAILOVER (a
// coordinated failover: the old primary stops taking writes and the replica
// catches up first, so nothing acknowledged is lost) and waits until every
// node agrees. A manual failover that does not complete within Valkey's
// 5 s (the replica was still syncing) is abandoned by Valkey; it is asked
// again, after the replica's link to its primary is up.
func (c *Cluster) Failover(replica *Server) error {
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		info, _ := Do(replica.Addr, "INFO", "replication")
		if strings.Contains(info, "master_link_status:up") {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	for attempt := 0; time.Now().Before(deadline); attempt++ {
		if out, err := Do(replica.Addr, "CLUSTER", "FAILOVER"); err != nil || !strings.HasPrefix(out, "OK") {
			return fmt.Errorf("valkeytest: CLUSTER FAILOVER on %s: %q %v", replica.Addr, out, err)
		}
		try := time.Now().Add(7 * time.Second)
		for time.Now().Before(try) {
			if role, _ := Do(replica.Addr, "ROLE"); strings.HasPrefix(role, "master\n") {
				return c.WaitOK(30 * time.Second)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return fmt.Errorf("valkeytest: %s did not become a primary", replica.Addr)
}

// NodeID returns a node's cluster id (CLUSTER MYID).
func NodeID(s *Server) (string, error) {
	out, err := Do(s.Addr, "CLUSTER", "MYID")
	return strings.TrimSpace(out), err
}

// Reshard moves n slots from the primary from to the primary to with the
// real tool, valkey-cli --cluster reshard, non-interactively; valkey-cli
// takes the source's lowest-numbered slots. It waits until every node
// agrees on the result.
func (c *Cluster) Reshard(from, to *Server, n int) error {
	fromID, err := NodeID(from)
	if err != nil {
		return err
	}
	toID, err := NodeID(to)
	if err != nil {
		return err
	}
	out, err := exec.Command("valkey-cli", "--cluster", "reshard", from.Addr,
		"--cluster-from", fromID, "--cluster-to", toID, "--cluster-slots", strconv.Itoa(n),
		"--cluster-pipeline", "2", "--cluster-yes").CombinedOutput()
	if err != nil {
		return fmt.Errorf("valkeytest: valkey-cli --cluster reshard: %v\n%s", err, out)
	}
	return c.WaitOK(30 * time.Second)
}
