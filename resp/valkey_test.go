package resp

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lockproxy/lockproxy/internal/valkeytest"
)

// exchange sends in on a fresh connection and returns everything the server
// sends back until it closes the connection.
func exchange(t *testing.T, addr string, in []byte) []byte {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	// Write concurrently: the server answers while we are still sending,
	// and a large pipeline would otherwise deadlock on full socket buffers.
	werr := make(chan error, 1)
	go func() {
		_, err := c.Write(in)
		werr <- err
	}()
	out, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("reading replies: %v", err)
	}
	if err := <-werr; err != nil && !strings.Contains(err.Error(), "reset") && !strings.Contains(err.Error(), "broken pipe") {
		t.Fatalf("writing: %v", err)
	}
	return out
}

type diffCmd struct {
	args   []string
	frames [2]int // replies expected in RESP2 and RESP3; zero means 1
}

func cmd(args ...string) diffCmd { return diffCmd{args: args} }

func TestValkeyReplyFraming(t *testing.T) {
	srv := valkeytest.Start(t)
	big := strings.Repeat("0123456789", 300_000) // 3 MB
	var list []string
	for i := range 1000 {
		list = append(list, fmt.Sprint("e", i))
	}
	deepLua := "local t = 'leaf' for i = 1, 100 do t = {t, i} end return t"
	common := []diffCmd{
		cmd("PING"),
		cmd("SET", "k", "v"),
		cmd("GET", "k"),
		cmd("GET", "missing"),
		cmd("INCR", "counter"),
		cmd("INCR", "k"),
		cmd("NOPE", "x"),
		cmd("MGET", "k", "missing", "k"),
		cmd("SET", "empty", ""),
		cmd("GET", "empty"),
		cmd("SET", "big", big),
		cmd("GET", "big"),
		cmd("STRLEN", "big"),
		cmd(append([]string{"RPUSH", "list"}, list...)...),
		cmd("LRANGE", "list", "0", "-1"),
		cmd("HSET", "h", "f1", "v1", "f2", "v2"),
		cmd("HGETALL", "h"),
		cmd("SADD", "s", "a", "b"),
		cmd("SMEMBERS", "s"),
		cmd("ZADD", "z", "1.5", "a", "2", "b"),
		cmd("ZRANGE", "z", "0", "-1", "WITHSCORES"),
		cmd("ZSCORE", "z", "a"),
		cmd("XADD", "st", "*", "f", "v"),
		cmd("XRANGE", "st", "-", "+"),
		cmd("CONFIG", "GET", "maxmemory*"),
		cmd("CLIENT", "INFO"),
		cmd("MULTI"), cmd("SET", "m", "1"), cmd("GET", "m"), cmd("EXEC"),
		cmd("EVAL", "return {1, {2, {3, 'x'}}, 's', {}}", "0"),
		cmd("EVAL", "return redis.status_reply('FINE')", "0"),
		cmd("EVAL", "return redis.error_reply('MYERR boom')", "0"),
		cmd("EVAL", "return {1, redis.error_reply('E'), redis.status_reply('S'), false, true}", "0"),
		cmd("EVAL", "return {1, nil, 3}", "0"),
		cmd("EVAL", deepLua, "0"),
		cmd("EVAL", "return ARGV", "0", "a", "", "c\r\n"),
		cmd("EVAL", "redis.setresp(3) return {double = 3.5}", "0"),
		cmd("EVAL", "redis.setresp(3) return {map = {a = 1}}", "0"),
		cmd("EVAL", "redis.setresp(3) return {set = {a = true}}", "0"),
		cmd("EVAL", "redis.setresp(3) return {big_number = '123456789012345678901234567890'}", "0"),
		cmd("EVAL", "redis.setresp(3) return redis.call('HGETALL', 'h')", "0"),
	}
	for _, p := range []string{"string", "integer", "double", "bignum", "null", "array", "set", "map", "attrib", "verbatim", "true", "false"} {
		common = append(common, cmd("DEBUG", "PROTOCOL", p))
	}
	common = append(common, diffCmd{args: []string{"DEBUG", "PROTOCOL", "push"}, frames: [2]int{1, 2}})

	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprint("RESP", proto), func(t *testing.T) {
			cmds := append([]diffCmd{cmd("HELLO", fmt.Sprint(proto)), cmd("FLUSHALL")}, common...)
			if proto == 3 {
				cmds = append(cmds,
					cmd("CLIENT", "TRACKING", "on"),
					cmd("GET", "tracked"),
					// The write invalidates the key this client reads: one
					// push besides the reply.
					diffCmd{args: []string{"SET", "tracked", "1"}, frames: [2]int{1, 2}},
					cmd("CLIENT", "TRACKING", "off"),
				)
			}
			// One push (RESP3) or array (RESP2) per channel.
			cmds = append(cmds, diffCmd{args: []string{"SUBSCRIBE", "c1", "c2"}, frames: [2]int{2, 2}}, cmd("PING"))
			cmds = append(cmds, cmd("QUIT"))

			var in []byte
			want := 0
			for _, c := range cmds {
				in = AppendCommandStrings(in, c.args...)
				if n := c.frames[proto-2]; n > 0 {
					want += n
				} else {
					want++
				}
			}
			out := exchange(t, srv.Addr, in)

			whole, err := frameWhole(out)
			if err != nil {
				t.Fatalf("framing: %v", err)
			}
			if len(whole) != want || sum(whole) != len(out) {
				t.Fatalf("%d frames covering %d of %d bytes, want %d frames", len(whole), sum(whole), len(out), want)
			}
			// Feeding the stream in small random steps (byte by byte would
			// be slow under -race with megabyte values) must find the same
			// frames.
			grown, err := frameSteps(out, rand.New(rand.NewPCG(uint64(proto), 9)), 16)
			if err != nil || !equalInts(grown, whole) {
				t.Fatalf("piecewise framing differs: %v", err)
			}
			var vals []Value
			rest := out
			for i, n := range whole {
				v, pn, err := Parse(rest)
				if err != nil || pn != n {
					t.Fatalf("frame %d (%q): Parse used %d bytes, %v; Framer said %d", i, clip(rest[:n]), pn, err, n)
				}
				vals = append(vals, v)
				rest = rest[n:]
			}
			if last := vals[len(vals)-1]; last.Type != '+' || string(last.Str) != "OK" {
				t.Fatalf("last reply %+v, want +OK for QUIT", last)
			}
			checkReplies(t, proto, cmds, vals, big)
		})
	}
}

// checkReplies spot-checks decoded replies against what the commands must
// return, which also shows the frames line up with the commands.
func checkReplies(t *testing.T, proto int, cmds []diffCmd, vals []Value, big string) {
	t.Helper()
	i := 0
	for _, c := range cmds {
		v := vals[i]
		name := strings.Join(c.args, " ")
		if len(name) > 40 {
			name = name[:40]
		}
		switch {
		case name == "GET big":
			if v.Type != '$' || string(v.Str) != big {
				t.Errorf("GET big: type %c len %d", v.Type, len(v.Str))
			}
		case name == "GET missing":
			if !v.Null {
				t.Errorf("GET missing: %+v", v)
			}
		case name == "HGETALL h":
			if (proto == 3 && v.Type != '%') || (proto == 2 && v.Type != '*') || len(v.Elems) != 4 {
				t.Errorf("HGETALL: %+v", v)
			}
		case name == "INCR k" || name == "NOPE x":
			if v.Type != '-' {
				t.Errorf("%s: %+v", name, v)
			}
		case name == "LRANGE list 0 -1":
			if len(v.Elems) != 1000 || string(v.Elems[999].Str) != "e999" {
				t.Errorf("LRANGE: %d elems", len(v.Elems))
			}
		case name == "EVAL return ARGV 0 a  c\r\n":
			if len(v.Elems) != 3 || string(v.Elems[2].Str) != "c\r\n" {
				t.Errorf("ARGV: %+v", v)
			}
		case name == "DEBUG PROTOCOL attrib" && proto == 3:
			if len(v.Attrs) != 2 || v.Type != '$' {
				t.Errorf("attrib: %+v", v)
			}
		case name == "DEBUG PROTOCOL map" && proto == 3:
			if v.Type != '%' {
				t.Errorf("map: %+v", v)
			}
		case name == "DEBUG PROTOCOL bignum" && proto == 3:
			if v.Type != '(' {
				t.Errorf("bignum: %+v", v)
			}
		case name == "DEBUG PROTOCOL push" && proto == 3:
			// Valkey may put the push before or after the reply.
			if v.Type+vals[i+1].Type != '>'+'$' {
				t.Errorf("push: %+v then %+v", v, vals[i+1])
			}
		case name == "DEBUG PROTOCOL verbatim" && proto == 3:
			if v.Type != '=' {
				t.Errorf("verbatim: %+v", v)
			}
		case name == "DEBUG PROTOCOL true" && proto == 3:
			if v.Type != '#' || v.Int != 1 {
				t.Errorf("true: %+v", v)
			}
		case name == "ZSCORE z a" && proto == 3:
			if v.Type != ',' || string(v.Str) != "1.5" {
				t.Errorf("ZSCORE: %+v", v)
			}
		}
		if n := c.frames[proto-2]; n > 0 {
			i += n
		} else {
			i++
		}
	}
}

func sum(xs []int) int {
	s := 0
	for _, x := range xs {
		s += x
	}
	return s
}

func clip(b []byte) []byte {
	if len(b) > 80 {
		return b[:80]
	}
	return b
}

// chunkDependent lists protocolErrorCases where Valkey's answer depends on
// how its reads happen to split the input (it only checks line length when
// a read ends without a terminator); the Reader gives the byte-at-a-time
// answer instead.
var chunkDependent = map[string]bool{
	"too big mbulk count with CR": true,
	"too big inline with LF":      true,
}

func TestValkeyProtocolErrors(t *testing.T) {
	srv := valkeytest.Start(t)
	for _, tt := range protocolErrorCases {
		if chunkDependent[tt.name] {
			continue
		}
		out := exchange(t, srv.Addr, []byte(tt.in))
		if want := "-ERR " + tt.err + "\r\n"; !bytes.HasSuffix(out, []byte(want)) {
			t.Errorf("%s: Valkey said %q, we say %q", tt.name, clip(out), want)
		}
	}
	auth := valkeytest.Start(t, "requirepass secret")
	for in, want := range map[string]string{
		"*11\r\n":                        "Protocol error: unauthenticated multibulk length",
		"*2\r\n$4\r\nAUTH\r\n$16385\r\n": "Protocol error: unauthenticated bulk length",
	} {
		r := NewReader(strings.NewReader(in), Limits{})
		r.SetAuthRequired(true)
		_, err := r.ReadCommand()
		out := exchange(t, auth.Addr, []byte(in))
		if err == nil || err.Error() != want || string(out) != "-ERR "+want+"\r\n" {
			t.Errorf("%q: Valkey said %q, we say %v", in, out, err)
		}
	}
}

const evalArgv = `EVAL "return ARGV" 0 `

// valkeyArgs asks Valkey how it splits a command: the command is an EVAL
// returning its ARGV, so the reply is the arguments as the server saw them.
func valkeyArgs(t *testing.T, addr string, in []byte) ([]string, string) {
	t.Helper()
	out := exchangeOne(t, addr, in)
	v, n, err := Parse(out)
	if err != nil || n == 0 {
		t.Fatalf("reply %q: %v", clip(out), err)
	}
	if v.Type == '-' {
		return nil, string(v.Str)
	}
	args := []string{}
	for _, e := range v.Elems {
		args = append(args, string(e.Str))
	}
	return args, ""
}

// exchangeOne sends in, then reads until one complete reply has arrived.
func exchangeOne(t *testing.T, addr string, in []byte) []byte {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write(in); err != nil {
		t.Fatal(err)
	}
	var out []byte
	var f Framer
	buf := make([]byte, 4096)
	for {
		n, err := c.Read(buf)
		out = append(out, buf[:n]...)
		if k, _ := f.Frame(out); k > 0 {
			return out[:k]
		}
		if err != nil {
			t.Fatalf("after %q: %v", clip(out), err)
		}
	}
}

// ourArgs is how the Reader splits the same bytes.
func ourArgs(in []byte) ([]string, string) {
	cmd, err := NewReader(bytes.NewReader(in), Limits{}).ReadCommand()
	if err != nil {
		return nil, "ERR " + err.Error()
	}
	return strs(cmd.Args[3:]), ""
}

func TestValkeyInlineSplitting(t *testing.T) {
	srv := valkeytest.Start(t)
	lines := []string{
		`SET a "b c"`, `"\x41\x4a\x4A"`, `"\x4"`, `"\x4g"`, `"\n\r\t\b\a\z\\\""`, `'a\'b'`,
		`'a\nb'`, `'a\\'`, `a"b c"`, `a'b c'd`, `a'b c' d`, `"a"b`, `"a`, `'a`, `"a\"`, `"a\`,
		"a\vb", "\v\fa", "a\rb", "\"a\"\rb", "\"a\"\vb", "\xff\x80", "", "   ", `"" ''`,
	}
	rng := rand.New(rand.NewPCG(5, 6))
	alphabet := []byte("\"'\\x4aAn \t\v\r\xff")
	for range 150 {
		b := make([]byte, 1+rng.IntN(12))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		lines = append(lines, string(b))
	}
	for _, l := range lines {
		in := []byte(evalArgv + l + "\r\n")
		want, werr := valkeyArgs(t, srv.Addr, in)
		got, gerr := ourArgs(in)
		if werr != gerr || !reflect.DeepEqual(got, want) {
			t.Errorf("%q: Valkey %q %q, we %q %q", l, want, werr, got, gerr)
		}
	}
}

func TestValkeyMultibulkSplitting(t *testing.T) {
	srv := valkeytest.Start(t)
	head := "*5\r\n$4\r\nEVAL\r\n$11\r\nreturn ARGV\r\n$1\r\n0\r\n"
	for _, tail := range []string{
		"$1\r\na\r\n$0\r\n\r\n",
		"$1\rXa\r\n$2\r\nbc\r\n", // any byte after '\r' in a header
		"$1\r\naXY$2\r\nbc\r\n",  // any two bytes after a bulk
		"$3\r\na\r\n\r\n$3\r\n\x00\x01\x02ZZ",
	} {
		in := []byte(head + tail)
		want, werr := valkeyArgs(t, srv.Addr, in)
		got, gerr := ourArgs(in)
		if werr != gerr || !reflect.DeepEqual(got, want) {
			t.Errorf("%q: Valkey %q %q, we %q %q", tail, want, werr, got, gerr)
		}
	}
}
