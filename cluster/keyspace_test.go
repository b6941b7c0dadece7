package cluster

import "testing"

func TestWantsKeyspace(t *testing.T) {
	for _, tt := range []struct {
		sections []string
		want     bool
	}{
		{nil, true},
		{[]string{"KEYSPACE"}, true},
		{[]string{"server", "all"}, true},
		{[]string{"everything"}, true},
		{[]string{"default"}, true},
		{[]string{"server"}, false},
		{[]string{"memory", "clients"}, false},
	} {
		if got := WantsKeyspace(args(tt.sections...)); got != tt.want {
			t.Errorf("WantsKeyspace(%q) = %v", tt.sections, got)
		}
	}
}

func TestInfoText(t *testing.T) {
	for _, tt := range []struct {
		reply, text string
		ok          bool
	}{
		{"$5\r\na:1\r\n\r\n", "a:1\r\n", true},
		{"=9\r\ntxt:a:1\r\n\r\n", "a:1\r\n", true},
		{"-NOPERM no\r\n", "", false},
		{"$-1\r\n", "", false},
	} {
		text, ok := InfoText([]byte(tt.reply))
		if string(text) != tt.text || ok != tt.ok {
			t.Errorf("InfoText(%q) = %q, %v", tt.reply, text, ok)
		}
	}
}

// The Keyspace section is summed over the primaries, avg_ttl weighted by
// expires; the other sections are the first text's.
func TestSumKeyspace(t *testing.T) {
	a := "# Server\r\nredis_version:8.0.0\r\nrun_id:aaa\r\n\r\n# Keyspace\r\ndb0:keys=10,expires=2,avg_ttl=1000,subexpiry=0\r\ndb3:keys=1,expires=0,avg_ttl=0,subexpiry=0\r\n"
	b := "# Server\r\nredis_version:8.0.0\r\nrun_id:bbb\r\n\r\n# Keyspace\r\ndb0:keys=5,expires=6,avg_ttl=3000,subexpiry=1\r\n\r\n# Other\r\nx:1\r\n"
	c := "# Server\r\nredis_version:8.0.0\r\nrun_id:ccc\r\n\r\n# Keyspace\r\n"
	got := string(SumKeyspace([][]byte{[]byte(a), []byte(b), []byte(c)}, 1))
	want := "# Server\r\nredis_version:8.0.0\r\nrun_id:bbb\r\n\r\n# Keyspace\r\ndb0:keys=15,expires=8,avg_ttl=2500,subexpiry=1\r\ndb3:keys=1,expires=0,avg_ttl=0,subexpiry=0\r\n\r\n# Other\r\nx:1\r\n"
	if got != want {
		t.Errorf("SumKeyspace =\n%q\nwant\n%q", got, want)
	}
	// A text without a Keyspace section (INFO server) comes back as it is.
	if got := string(SumKeyspace([][]byte{[]byte("# Server\r\nx:1\r\n")}, 0)); got != "# Server\r\nx:1\r\n" {
		t.Errorf("no section: %q", got)
	}
}
