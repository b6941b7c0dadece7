package main

import (
	"fmt"
	"net"
	"strings"
	"time"
)

// sentinelClient is the plain Sentinel run's client, as a Sentinel-aware
// library is (go-redis's failover client, redis-py's Sentinel): it asks the
// Sentinels for the primary's address whenever it has no connection, and
// when a server answers READONLY (a primary demoted under it) it drops the
// connection, asks again and sends the command again — READONLY says it did
// not run. A cut connection is recorded as cut, as a plain connection's;
// the next command asks the Sentinels. The reply recorded is the last one;
// s is the first send.
//
// It speaks RESP itself rather than through go-redis, so that the history
// holds the raw replies and a command is never re-sent after a cut (which
// go-redis's retries would do, hiding the cut and maybe writing twice).
type sentinelClient struct {
	sentinels []*conn
	name      string // CLIENT SETNAME on the primary's connections, when set
	c         *conn  // the primary's, when known
}

func newSentinelClient(addrs []string, name string) *sentinelClient {
	sc := &sentinelClient{name: name}
	for _, a := range addrs {
		sc.sentinels = append(sc.sentinels, &conn{addr: a})
	}
	return sc
}

func (sc *sentinelClient) close() {
	for _, c := range sc.sentinels {
		c.close()
	}
	if sc.c != nil {
		sc.c.close()
	}
}

// readonlyRetries bounds how often one command follows a READONLY.
const readonlyRetries = 5

func (sc *sentinelClient) do(args ...string) (reply string, s, r int64) {
	s = time.Now().UnixNano()
	for i := 0; ; i++ {
		if sc.c == nil || sc.c.nc == nil {
			addr, err := sc.primary()
			if err != nil {
				return replyCut + " sentinel: " + err.Error(), s, time.Now().UnixNano()
			}
			if sc.c == nil || sc.c.addr != addr {
				if sc.c != nil {
					sc.c.close()
				}
				sc.c = &conn{addr: addr, name: sc.name}
			}
		}
		reply, _, r = sc.c.do(args...)
		if errCode(reply) != "READONLY" || i == readonlyRetries {
			return reply, s, r
		}
		sc.c.close()
		time.Sleep(20 * time.Millisecond)
	}
}

// primary asks each Sentinel in turn for the primary's address.
func (sc *sentinelClient) primary() (string, error) {
	var errs []string
	for _, c := range sc.sentinels {
		reply, _, _ := c.do("SENTINEL", "GET-MASTER-ADDR-BY-NAME", sentinelMaster)
		addr, err := parseMasterAddr(reply)
		if err == nil {
			return addr, nil
		}
		errs = append(errs, c.addr+": "+err.Error())
	}
	return "", fmt.Errorf("no Sentinel names the primary: %s", strings.Join(errs, "; "))
}

// parseMasterAddr reads the reply to SENTINEL GET-MASTER-ADDR-BY-NAME: an
// array of the host and the port, else nil (an unknown
// master) or an error.
func parseMasterAddr(reply string) (string, error) {
	if strings.HasPrefix(reply, replyCut) || reply == replyTimeout {
		return "", fmt.Errorf("%s", reply)
	}
	if !strings.HasPrefix(reply, "*2\r\n") {
		return "", fmt.Errorf("no address: %q", reply)
	}
	var parts []string
	rest := reply[len("*2\r\n"):]
	for range 2 {
		head, body, ok := strings.Cut(rest, "\r\n")
		if !ok || !strings.HasPrefix(head, "$") {
			return "", fmt.Errorf("no address: %q", reply)
		}
		var l int
		if _, err := fmt.Sscanf(head, "$%d", &l); err != nil || l < 0 || len(body) < l+2 || body[l:l+2] != "\r\n" {
			return "", fmt.Errorf("no address: %q", reply)
		}
		parts = append(parts, body[:l])
		rest = body[l+2:]
	}
	if rest != "" {
		return "", fmt.Errorf("not one reply: %q", reply)
	}
	return net.JoinHostPort(parts[0], parts[1]), nil
}
