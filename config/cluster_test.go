package config

import (
	"strings"
	"testing"
)

func TestClusterConfig(t *testing.T) {
	c, err := Parse("c.yaml", []byte("cluster_face: single_node\nupstream:\n  cluster:\n    seeds: [127.0.0.1:7000, \"h2:7001\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Upstream.Cluster.Seeds; len(got) != 2 || got[0] != "127.0.0.1:7000" || got[1] != "h2:7001" {
		t.Errorf("seeds = %q", got)
	}
	if c.Upstream.Addr != "" {
		t.Errorf("addr = %q with cluster seeds; want it left unset, not defaulted", c.Upstream.Addr)
	}
	if c.ClusterFace != ClusterFaceSingleNode {
		t.Errorf("cluster_face = %q", c.ClusterFace)
	}
	d, err := Parse("c.yaml", []byte("listen: 127.0.0.1:6380\n"))
	if err != nil {
		t.Fatal(err)
	}
	if d.ClusterFace != ClusterFaceHidden || d.Upstream.Addr != DefaultUpstreamAddr {
		t.Errorf("defaults: cluster_face %q, addr %q", d.ClusterFace, d.Upstream.Addr)
	}
	// A Config built in code is checked the same way.
	c.Upstream.Addr = "127.0.0.1:6379"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "upstream.addr: cannot be set with upstream.cluster") {
		t.Errorf("Validate with addr and seeds: %v", err)
	}
}

func TestClusterConfigErrors(t *testing.T) {
	cases := []struct {
		name, yaml string
		want       []string
	}{
		{"seed not host:port", "upstream:\n  cluster:\n    seeds: [127.0.0.1:7000, nohost]\n",
			[]string{`c.yaml:3:29: upstream.cluster.seeds[1]: "nohost" is not host:port (e.g. 127.0.0.1:6379)`}},
		{"seeds not a list", "upstream:\n  cluster:\n    seeds: 127.0.0.1:7000\n",
			[]string{`c.yaml:3: upstream.cluster.seeds: expected a list of values, got the value "127.0.0.1:7000"`}},
		{"unknown cluster key", "upstream:\n  cluster:\n    seed: [a:1]\n",
			[]string{`c.yaml:3: upstream.cluster.seed: unknown key (did you mean seeds?)`}},
		{"cluster and addr", "upstream:\n  addr: 127.0.0.1:6379\n  cluster:\n    seeds: [127.0.0.1:7000]\n",
			[]string{`c.yaml:2: upstream.addr: cannot be set with upstream.cluster: the cluster's nodes are found from its seeds; remove addr`}},
		{"cluster and sentinel", "upstream:\n  cluster:\n    seeds: [127.0.0.1:7000]\n  sentinel:\n    master: m\n    addrs: [127.0.0.1:26379]\n",
			[]string{`c.yaml:4: upstream.sentinel: cannot be set with upstream.cluster: a cluster fails over by itself; remove sentinel`}},
		{"cluster and db", "upstream:\n  db: 3\n  cluster:\n    seeds: [127.0.0.1:7000]\n",
			[]string{`c.yaml:2: upstream.db: 3 cannot be used with upstream.cluster: a cluster has database 0 only`}},
		{"face unknown", "cluster_face: cluster\nupstream:\n  cluster:\n    seeds: [127.0.0.1:7000]\n",
			[]string{`c.yaml:1: cluster_face: "cluster" is not one of hidden, single_node`}},
		{"single_node without cluster", "cluster_face: single_node\n",
			[]string{`c.yaml:1: cluster_face: single_node needs upstream.cluster: without a cluster behind it, use the default, hidden`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("c.yaml", []byte(tc.yaml))
			if err == nil {
				t.Fatalf("no error; want %q", tc.want)
			}
			errs := ConfigErrors(err)
			var got []string
			for _, e := range errs {
				got = append(got, e.Error())
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// In front of a cluster, a rule whose locks cannot keep their records,
// fence counter or guarded keys in the lock's hash slot is refused at the
// line of the setting to change; the same rules pass without a cluster,
// and the documented shapes pass with one.
func TestClusterLockSlots(t *testing.T) {
	const seeds = "upstream:\n  cluster:\n    seeds: [127.0.0.1:7000]\n"
	cases := []struct {
		name, locks string
		want        []string
	}{
		{"tagged lock and fence", "locks:\n  - pattern: \"{*}:lock\"\n    fence:\n      counter: \"{base}:fence\"\n      guards: [\"{base}:*\", \"{base}:data\"]\n", nil},
		{"plain pattern", "locks:\n  - pattern: \"*:lock\"\n  - pattern: \"lock:*\"\n  - pattern: \"{app}:lock:*\"\n", nil},
		{"untagged lock, wrapped fence keys", "locks:\n  - pattern: \"*:mutex\"\n    fence:\n      counter: \"{{key}}:fence\"\n      guards: [\"{{key}}:*\"]\n", nil},
		{"brace without tag", "locks:\n  - pattern: \"*}:lock\"\n",
			[]string{`c.yaml:5: locks[0].pattern: "*}:lock": in a cluster the lock records of its keys (e.g. "sample}:lock") cannot share the key's hash slot: the key has a '}' and no hash tag before it, so lockproxy would refuse every lock of this rule (CROSSSLOT); put the name in a hash tag, e.g. "{*}:lock"`}},
		{"empty tag", "locks:\n  - pattern: \"lock:{}*\"\n",
			[]string{`c.yaml:5: locks[0].pattern: "lock:{}*": in a cluster the lock records of its keys (e.g. "lock:{}sample") cannot share`}},
		{"fence counter outside", "locks:\n  - pattern: \"*:mutex\"\n    fence:\n      counter: \"{key}:fence\"\n      guards: [\"{{key}}:data\"]\n",
			[]string{`c.yaml:7: locks[0].fence.counter: "{key}:fence" puts the fence counter of lock "sample:mutex" at "sample:mutex:fence", in another hash slot`}},
		{"guard outside", "locks:\n  - pattern: \"*:mutex\"\n    fence:\n      counter: \"{{key}}:fence\"\n      guards: [\"{{key}}:ok\", \"data:{key}\", \"data:{key}:*\"]\n",
			[]string{
				`c.yaml:8:30: locks[0].fence.guards[1]: "data:{key}" guards, for lock "sample:mutex", keys in hash slot`,
				`c.yaml:8:44: locks[0].fence.guards[2]: "data:{key}:*" guards, for lock "sample:mutex", keys in many hash slots ("data:sample:mutex:*")`,
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("c.yaml", []byte(seeds+tc.locks))
			var got []string
			for _, e := range ConfigErrors(err) {
				got = append(got, e.Error())
			}
			if len(got) != len(tc.want) {
				t.Fatalf("errors:\n%s\nwant %d starting:\n%s", strings.Join(got, "\n"), len(tc.want), strings.Join(tc.want, "\n"))
			}
			for i := range got {
				if !strings.HasPrefix(got[i], tc.want[i]) {
					t.Errorf("error %d:\n%s\nwant it to start:\n%s", i, got[i], tc.want[i])
				}
			}
			// Without a cluster every key is on one server: no slot to share.
			if _, err := Parse("c.yaml", []byte(tc.locks)); err != nil {
				t.Errorf("without a cluster: %v", err)
			}
		})
	}
}
