package e2e_test

import (
	"testing"
	"time"

	"github.com/lockproxy/lockproxy/config"
	"github.com/lockproxy/lockproxy/proxy"
)

// CLIENT PAUSE through the proxy pauses Valkey, as directly: a write waits
// for the pause's end and then runs, even when the pause outlasts
// reply_timeout (the proxy allows for a pause it forwarded instead of
// reporting the upstream lost); reads of a client on another upstream
// connection go on meanwhile, as Valkey lets them; CLIENT UNPAUSE ends it
// at once, though a paused write waits on the shared connection.
func TestClientPauseThroughProxy(t *testing.T) {
	eachEngine(t, func(t *testing.T, o proxy.Options) {
		o.Upstream.PoolSize = 1
		o.Upstream.ReplyTimeout = config.Duration(300 * time.Millisecond)
		e := newEnv(t, o)
		pauser, writer, reader := dialRaw(t, e.addr), dialRaw(t, e.addr), dialRaw(t, e.addr)
		eq(t, writer.do("SET", "p", "0"), "+OK\r\n")
		eq(t, reader.do("WATCH", "other"), "+OK\r\n") // a dedicated connection

		// A pause longer than reply_timeout: the write waits it out.
		eq(t, pauser.do("CLIENT", "PAUSE", "1200", "WRITE"), "+OK\r\n")
		writer.send(string(redisCmd("SET", "p", "1")))
		eq(t, reader.do("GET", "p"), bulk("0")) // reads are not paused
		eq(t, writer.read(), "+OK\r\n")
		eq(t, writer.do("GET", "p"), bulk("1"))

		// A long pause, ended by CLIENT UNPAUSE from another client.
		eq(t, pauser.do("CLIENT", "PAUSE", "60000", "WRITE"), "+OK\r\n")
		writer.send(string(redisCmd("SET", "p", "2")))
		eq(t, reader.do("GET", "p"), bulk("1"))
		eq(t, pauser.do("CLIENT", "UNPAUSE"), "+OK\r\n")
		eq(t, writer.read(), "+OK\r\n")
		eq(t, reader.do("GET", "p"), bulk("2"))
	})
}
