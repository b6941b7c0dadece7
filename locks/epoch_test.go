package locks

import (
	"strings"
	"testing"
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
