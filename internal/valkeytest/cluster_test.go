package valkeytest

import (
	"strconv"
	"strings"
	"testing"
)

// The helper's cluster serves every slot on three primaries, each with a
// replica, and MigrateSlot moves a slot with its keys.
func TestCluster(t *testing.T) {
	c, err := StartCluster()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	prims, err := c.Primaries()
	if err != nil || len(prims) != 3 {
		t.Fatalf("primaries: %d %v", len(prims), err)
	}
	slot := 42
	src, err := c.Primary(slot)
	if err != nil {
		t.Fatal(err)
	}
	// A key in slot 42: find one by asking the cluster.
	key := ""
	for i := 0; key == ""; i++ {
		k := "k" + strconv.Itoa(i)
		out, err := Do(src.Addr, "CLUSTER", "KEYSLOT", k)
		if err != nil {
			t.Fatal(err)
		}
		if strings.TrimSpace(out) == "42" {
			key = k
		}
	}
	if out, _ := Do(src.Addr, "SET", key, "v"); out != "OK\n" {
		t.Fatalf("SET on the slot's primary: %q", out)
	}
	dst := prims[0]
	if dst == src {
		dst = prims[1]
	}
	if err := c.MigrateSlot(slot, dst, nil); err != nil {
		t.Fatal(err)
	}
	if now, _ := c.Primary(slot); now != dst {
		t.Fatalf("after migration slot %d is on %v, want %s", slot, now, dst.Addr)
	}
	if out, _ := Do(dst.Addr, "GET", key); out != "v\n" {
		t.Errorf("GET on the new primary: %q", out)
	}
	if out, _ := Do(src.Addr, "GET", key); !strings.HasPrefix(out, "MOVED 42 "+dst.Addr) {
		t.Errorf("GET on the old primary: %q, want MOVED", out)
	}
}
