package cluster

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/lockproxy/lockproxy/internal/valkeytest"
)

func TestCRC16(t *testing.T) {
	// The check value of CRC-16/XMODEM, also in Valkey's crc16.c test.
	if got := crc16([]byte("123456789")); got != 0x31c3 {
		t.Fatalf("crc16(123456789) = %#x, want 0x31c3", got)
	}
}

// Slot agrees with CLUSTER KEYSLOT on a real server, for hash tags and
// their corner cases and for random binary keys.
func TestSlotMatchesKeyslot(t *testing.T) {
	srv := valkeytest.Start(t, "cluster-enabled yes", "cluster-config-file nodes.conf")
	c := valkeytest.Dial(t, srv.Addr, 2)
	keys := []string{
		"", "a", "foo", "{user1000}.following", "{user1000}.followers",
		"foo{}{bar}", "foo{{bar}}zap", "foo{bar}{zap}", "{}", "{", "}", "}{", "{a", "a}", "{a}",
		"x{y", "x}y{z}", "mylock", "{mylock}:lockproxy:grants", "a}b:lockproxy:grants",
		"\x00\xff{\x00}", strings.Repeat("k", 1000),
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		b := make([]byte, r.IntN(12))
		for i := range b {
			b[i] = "ab{}\x00\xff"[r.IntN(6)]
		}
		keys = append(keys, string(b))
	}
	for _, k := range keys {
		reply := c.Do(t, "CLUSTER", "KEYSLOT", k)
		want, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(string(reply), ":")))
		if err != nil {
			t.Fatalf("CLUSTER KEYSLOT %q: %q", k, reply)
		}
		if got := Slot([]byte(k)); int(got) != want {
			t.Errorf("Slot(%q) = %d, CLUSTER KEYSLOT says %d", k, got, want)
		}
	}
}

func ExampleSlot() {
	fmt.Println(Slot([]byte("{user1000}.following")) == Slot([]byte("{user1000}.followers")))
	fmt.Println(Slot([]byte("foo")))
	// Output:
	// true
	// 12182
}
