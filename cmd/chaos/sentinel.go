package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// The Sentinel run (-sentinel): a primary and a replica, three Sentinels
// watching them (quorum 2), lockproxy following Sentinel, and, in the plain
// run, workers that ask Sentinel for the primary as a Sentinel-aware client
// does (sentinelClient), so that both runs meet the same faults. The Valkey
// fault of the schedule is a failover that loses writes
// (sentinelLossyFailover).

// sentinelMaster is the name the Sentinels monitor the primary under.
const sentinelMaster = "chaos"

// replDirectives are both servers' replication settings: a replica logs in
// to its primary as the user "repl", so that switching that user off on the
// primary (and killing its link) cuts the replica off — SIGSTOP is not
// enough, the kernel keeps buffering. Both servers have the user and log in
// with it, since their roles swap at every failover.
var replDirectives = []string{
	"repl-diskless-sync-delay 0",
	"user repl on >replpw ~* &* +@all",
	"masteruser repl", "masterauth replpw",
}

// waitLimit bounds each wait for something the servers will do (Sentinel's
// timers, a replica's sync): generous, so a loaded machine still gets
// there; it only ends a run that is broken.
const waitLimit = 2 * time.Minute

// sentinelSet is the Sentinel run's servers.
type sentinelSet struct {
	nodes     [2]*valkey // the first starts as the primary; roles swap
	sentinels []*exec.Cmd
	addrs     []string // the Sentinels'
}

// startSentinelSet starts the primary, its replica and three Sentinels in
// dir, and waits until the replica is in sync and the Sentinels see it and
// each other.
func startSentinelSet(bin, dir string, loseWrites bool) (ss *sentinelSet, err error) {
	sbin, err := exec.LookPath("valkey-sentinel")
	if err != nil {
		return nil, fmt.Errorf("valkey-sentinel not found on PATH (Debian package valkey-sentinel): %w", err)
	}
	ss = &sentinelSet{}
	defer func() {
		if err != nil {
			ss.stop()
		}
	}()
	for i := range ss.nodes {
		d := filepath.Join(dir, "valkey"+strconv.Itoa(i))
		if err := os.MkdirAll(d, 0o700); err != nil {
			return ss, err
		}
		extra := replDirectives
		if i == 1 {
			extra = append(extra[:len(extra):len(extra)], "replicaof "+strings.Replace(ss.nodes[0].addr, ":", " ", 1))
		}
		if ss.nodes[i], err = startValkey(bin, d, loseWrites, extra...); err != nil {
			return ss, err
		}
	}
	primary := ss.nodes[0]
	if err := waitUntil("the replica is in sync", func() bool { return linkUp(ss.nodes[1].addr, primary.addr) }); err != nil {
		return ss, err
	}
	host, port, _ := net.SplitHostPort(primary.addr)
	for i := 0; i < 3; i++ {
		d := filepath.Join(dir, "sentinel"+strconv.Itoa(i))
		if err := os.MkdirAll(d, 0o700); err != nil {
			return ss, err
		}
		p, err := freePort()
		if err != nil {
			return ss, err
		}
		conf := filepath.Join(d, "sentinel.conf") // Sentinel rewrites it
		err = os.WriteFile(conf, []byte(fmt.Sprintf(`port %d
bind 127.0.0.1
dir %s
logfile %s
sentinel monitor %[5]s %[4]s %[6]s 2
sentinel down-after-milliseconds %[5]s 1000
sentinel failover-timeout %[5]s 10000
sentinel parallel-syncs %[5]s 1
`, p, d, filepath.Join(d, "sentinel.log"), host, sentinelMaster, port)), 0o600)
		if err != nil {
			return ss, err
		}
		cmd := exec.Command(sbin, conf)
		if err := cmd.Start(); err != nil {
			return ss, err
		}
		ss.sentinels = append(ss.sentinels, cmd)
		ss.addrs = append(ss.addrs, net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
	}
	for _, a := range ss.addrs {
		if err := waitUntil("Sentinel "+a+" answers", func() bool { return answers(a) }); err != nil {
			return ss, err
		}
	}
	return ss, waitUntil("every Sentinel sees the replica and the others", func() bool {
		for _, a := range ss.addrs {
			if !sentinelSees(a, ss.nodes[1].addr) {
				return false
			}
		}
		return true
	})
}

func (ss *sentinelSet) stop() {
	for _, c := range ss.sentinels {
		_ = c.Process.Kill()
		_ = c.Wait()
	}
	ss.sentinels = nil
	for _, n := range ss.nodes {
		if n != nil {
			n.kill()
		}
	}
}

// master is the primary's address as the Sentinels give it, when they all
// agree.
func (ss *sentinelSet) master() (string, error) {
	var agreed string
	for _, a := range ss.addrs {
		c := redis.NewSentinelClient(&redis.Options{Addr: a, MaxRetries: -1, DialTimeout: time.Second})
		hp, err := c.GetMasterAddrByName(context.Background(), sentinelMaster).Result()
		c.Close()
		if err != nil || len(hp) != 2 {
			return "", fmt.Errorf("Sentinel %s: %v %v", a, hp, err)
		}
		addr := net.JoinHostPort(hp[0], hp[1])
		if agreed != "" && addr != agreed {
			return "", fmt.Errorf("the Sentinels disagree: %s and %s", agreed, addr)
		}
		agreed = addr
	}
	return agreed, nil
}

// sentinelSees reports whether the Sentinel at sa sees the replica at addr
// with its link up, and the two other Sentinels.
func sentinelSees(sa, replica string) bool {
	c := redis.NewSentinelClient(&redis.Options{Addr: sa, MaxRetries: -1, DialTimeout: time.Second})
	defer c.Close()
	host, port, _ := net.SplitHostPort(replica)
	reps, _ := c.Replicas(context.Background(), sentinelMaster).Result()
	seen := false
	for _, r := range reps {
		if r["ip"] == host && r["port"] == port && r["flags"] == "slave" && r["master-link-status"] == "ok" {
			seen = true
		}
	}
	others, _ := c.Sentinels(context.Background(), sentinelMaster).Result()
	return seen && len(others) == 2
}

// linkUp reports whether the server at replica is a replica of primary
// with its link up.
func linkUp(replica, primary string) bool {
	c := redis.NewClient(&redis.Options{Addr: replica, MaxRetries: -1, DialTimeout: time.Second})
	defer c.Close()
	info, err := c.Info(context.Background(), "replication").Result()
	_, port, _ := net.SplitHostPort(primary)
	return err == nil && strings.Contains(info, "role:slave") &&
		strings.Contains(info, "master_port:"+port+"\r\n") && strings.Contains(info, "master_link_status:up")
}

// waitUntil polls cond until it holds, for at most waitLimit.
func waitUntil(what string, cond func() bool) error {
	for deadline := time.Now().Add(waitLimit); !cond(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: not within %v", what, waitLimit)
		}
	}
	return nil
}

// do sends one command to addr and fails on an error reply.
func do(addr string, args ...any) error {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second})
	defer c.Close()
	return c.Do(context.Background(), args...).Err()
}

// sentinelLossyFailover is the -sentinel run's Valkey fault: the replica is
// cut off (its user "repl" switched off on the primary, its link killed),
// the workers go on against the primary alone for half a lease to a lease,
// the primary is killed with SIGKILL, and Sentinel promotes the replica,
// which never got those writes. The old primary is started again (empty
// with -lose-writes), Sentinel makes it the new primary's replica, and the
// fault ends when its link is up, with the user "repl" on again on both.
func sentinelLossyFailover(ss *sentinelSet, rng *rand.Rand, lease time.Duration, t *Totals) error {
	addr, err := ss.master()
	if err != nil {
		return err
	}
	p, r := ss.nodes[0], ss.nodes[1]
	if r.addr == addr {
		p, r = r, p
	} else if p.addr != addr {
		return fmt.Errorf("the Sentinels name %s as the primary, neither of %s and %s", addr, p.addr, r.addr)
	}
	for _, c := range [][]any{{"ACL", "SETUSER", "repl", "off"}, {"CLIENT", "KILL", "USER", "repl"}} {
		if err := do(p.addr, c...); err != nil {
			return fmt.Errorf("cutting the replica off: %v: %w", c, err)
		}
	}
	if err := waitUntil("the replica's link is down", func() bool { return !linkUp(r.addr, p.addr) }); err != nil {
		return err
	}
	time.Sleep(lease/2 + time.Duration(rng.Int64N(int64(lease/2)+1)))
	p.kill()
	if err := waitUntil("Sentinel promotes "+r.addr, func() bool { a, err := ss.master(); return err == nil && a == r.addr }); err != nil {
		return err
	}
	if err := p.start(); err != nil {
		return fmt.Errorf("restarting the old primary: %w", err)
	}
	for _, n := range []*valkey{p, r} {
		if err := do(n.addr, "ACL", "SETUSER", "repl", "on", ">replpw", "~*", "&*", "+@all"); err != nil {
			return fmt.Errorf("re-arming the user repl on %s: %w", n.addr, err)
		}
	}
	if err := waitUntil("Sentinel makes "+p.addr+" the replica of "+r.addr, func() bool { return linkUp(p.addr, r.addr) }); err != nil {
		return err
	}
	t.LossyFailovers++
	return nil
}
