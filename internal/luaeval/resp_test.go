package luaeval

import (
	"testing"

	"github.com/lockproxy/lockproxy/internal/valkeytest"
)

// respConn is a raw RESP connection to a real server: the differential
// tests need the reply bytes exactly as sent.
type respConn = valkeytest.Conn

func dialRESP(t *testing.T, addr string, proto int) *respConn {
	t.Helper()
	return valkeytest.Dial(t, addr, proto)
}
