package resp

import (
	"reflect"
	"strings"
	"testing"
)

// canonical holds AppendValue's output for inputs it does not reproduce.
var canonical = map[string]string{
	"|0\r\n:1\r\n": ":1\r\n",
	"|1\r\n+a\r\n:1\r\n|1\r\n+b\r\n:2\r\n_\r\n": "|2\r\n+a\r\n:1\r\n+b\r\n:2\r\n_\r\n",
}

func TestParse(t *testing.T) {
	s := func(x string) []byte { return []byte(x) }
	tests := []struct {
		in   string
		want Value
	}{
		{"+OK\r\n", Value{Type: '+', Str: s("OK")}},
		{"-ERR bad\r\n", Value{Type: '-', Str: s("ERR bad")}},
		{":-42\r\n", Value{Type: ':', Int: -42}},
		{"$3\r\na\r\n\r\n", Value{Type: '$', Str: s("a\r\n")}},
		{"$-1\r\n", Value{Type: '$', Null: true}},
		{"*-1\r\n", Value{Type: '*', Null: true}},
		{"_\r\n", Value{Type: '_', Null: true}},
		{"*0\r\n", Value{Type: '*', Elems: []Value{}}},
		{"#t\r\n", Value{Type: '#', Int: 1}},
		{"#f\r\n", Value{Type: '#'}},
		{",1.5\r\n", Value{Type: ',', Str: s("1.5")}},
		{"(123\r\n", Value{Type: '(', Str: s("123")}},
		{"!3\r\nERR\r\n", Value{Type: '!', Str: s("ERR")}},
		{"=7\r\ntxt:abc\r\n", Value{Type: '=', Str: s("txt:abc")}},
		{"*2\r\n:1\r\n*1\r\n$1\r\nx\r\n", Value{Type: '*', Elems: []Value{
			{Type: ':', Int: 1},
			{Type: '*', Elems: []Value{{Type: '$', Str: s("x")}}},
		}}},
		{"%1\r\n+k\r\n~1\r\n:1\r\n", Value{Type: '%', Elems: []Value{
			{Type: '+', Str: s("k")},
			{Type: '~', Elems: []Value{{Type: ':', Int: 1}}},
		}}},
		{">2\r\n+message\r\n+hi\r\n", Value{Type: '>', Elems: []Value{{Type: '+', Str: s("message")}, {Type: '+', Str: s("hi")}}}},
		{"|1\r\n+ttl\r\n:5\r\n+v\r\n", Value{Type: '+', Str: s("v"), Attrs: []Value{{Type: '+', Str: s("ttl")}, {Type: ':', Int: 5}}}},
		{"|0\r\n:1\r\n", Value{Type: ':', Int: 1}},
		{"|1\r\n+a\r\n:1\r\n*1\r\n|1\r\n+b\r\n:2\r\n:3\r\n", Value{
			Type:  '*',
			Attrs: []Value{{Type: '+', Str: s("a")}, {Type: ':', Int: 1}},
			Elems: []Value{{Type: ':', Int: 3, Attrs: []Value{{Type: '+', Str: s("b")}, {Type: ':', Int: 2}}}},
		}},
		{"|1\r\n+a\r\n:1\r\n|1\r\n+b\r\n:2\r\n_\r\n", Value{Type: '_', Null: true, Attrs: []Value{
			{Type: '+', Str: s("a")}, {Type: ':', Int: 1}, {Type: '+', Str: s("b")}, {Type: ':', Int: 2},
		}}},
	}
	for _, tt := range tests {
		in := tt.in + "+next\r\n"
		v, n, err := Parse([]byte(in))
		if err != nil || n != len(tt.in) {
			t.Errorf("%q: n=%d err=%v", tt.in, n, err)
			continue
		}
		if !reflect.DeepEqual(v, tt.want) {
			t.Errorf("%q:\n got %+v\nwant %+v", tt.in, v, tt.want)
		}
		// Re-encoding gives back the same reply (these inputs are canonical).
		want := canonical[tt.in]
		if want == "" {
			want = tt.in
		}
		if enc := string(AppendValue(nil, v)); enc != want {
			t.Errorf("%q: AppendValue gave %q", tt.in, enc)
		}
	}
	if _, n, err := Parse([]byte("*2\r\n:1\r\n")); n != 0 || err != nil {
		t.Fatalf("incomplete: %d %v", n, err)
	}
	if _, _, err := Parse([]byte("*x\r\n")); err == nil {
		t.Fatal("malformed reply parsed")
	}
}

func TestParseDoesNotAlias(t *testing.T) {
	b := []byte("*2\r\n$3\r\nabc\r\n+de\r\n")
	v, _, _ := Parse(b)
	for i := range b {
		b[i] = 'Z'
	}
	if string(v.Elems[0].Str) != "abc" || string(v.Elems[1].Str) != "de" {
		t.Fatalf("Value aliases its input: %q %q", v.Elems[0].Str, v.Elems[1].Str)
	}
}

func TestParseAllReplyCases(t *testing.T) {
	for _, c := range replyCases {
		v, n, err := Parse([]byte(c))
		if err != nil || n != len(c) {
			t.Errorf("%q: %d %v", c, n, err)
			continue
		}
		enc := AppendValue(nil, v)
		v2, n2, err := Parse(enc)
		if err != nil || n2 != len(enc) || !reflect.DeepEqual(v, v2) {
			t.Errorf("%q: round trip through %q differs", c, enc)
		}
	}
}

func TestAppend(t *testing.T) {
	tests := []struct{ got, want string }{
		{string(AppendCommand(nil, []byte("SET"), []byte("k"), nil)), "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n"},
		{string(AppendCommandStrings([]byte("x"), "PING")), "x*1\r\n$4\r\nPING\r\n"},
		{string(AppendError(nil, "ERR bad\r\nthing\n")), "-ERR bad  thing \r\n"},
		{string(AppendSimple(nil, "OK")), "+OK\r\n"},
		{string(AppendSimple(nil, "a\rb")), "+a b\r\n"},
		{string(AppendInt(nil, -1234567890123)), ":-1234567890123\r\n"},
		{string(AppendInt(nil, 7)), ":7\r\n"},
		{string(AppendBulk(nil, []byte("a\r\nb"))), "$4\r\na\r\nb\r\n"},
		{string(AppendBulkString(nil, "")), "$0\r\n\r\n"},
		{string(AppendNull(nil, 2)), "$-1\r\n"},
		{string(AppendNull(nil, 3)), "_\r\n"},
		{string(AppendText(nil, []byte("# S\r\na:1\r\n"), 2)), "$10\r\n# S\r\na:1\r\n\r\n"},
		{string(AppendText(nil, []byte("# S\r\na:1\r\n"), 3)), "=14\r\ntxt:# S\r\na:1\r\n\r\n"},
		{string(AppendArrayHeader(nil, 12)), "*12\r\n"},
		{string(AppendArrayHeader(nil, -1)), "*-1\r\n"},
		{string(AppendMapHeader(nil, 2, 3)), "%2\r\n"},
		{string(AppendMapHeader(nil, 2, 2)), "*4\r\n"},
		{string(AppendSetHeader(nil, 2, 3)), "~2\r\n"},
		{string(AppendSetHeader(nil, 2, 2)), "*2\r\n"},
		{string(AppendPushHeader(nil, 3, 3)), ">3\r\n"},
		{string(AppendPushHeader(nil, 3, 2)), "*3\r\n"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
	// What the Append helpers write, the Reader and Framer read back.
	cmd := AppendCommandStrings(nil, "SET", "k", strings.Repeat("v", 100))
	r := NewReader(strings.NewReader(string(cmd)), Limits{})
	if c, err := r.ReadCommand(); err != nil || string(c.Raw) != string(cmd) {
		t.Fatalf("%v", err)
	}
}

func TestParseLL(t *testing.T) {
	tests := []struct {
		in string
		v  int64
		ok bool
	}{
		{"0", 0, true}, {"1", 1, true}, {"-1", -1, true}, {"10", 10, true},
		{"9223372036854775807", 9223372036854775807, true},
		{"-9223372036854775808", -9223372036854775808, true},
		{"9223372036854775808", 0, false}, {"-9223372036854775809", 0, false},
		{"18446744073709551616", 0, false}, {"99999999999999999999", 0, false},
		{"", 0, false}, {"-", 0, false}, {"-0", 0, false}, {"00", 0, false}, {"01", 0, false},
		{"+1", 0, false}, {" 1", 0, false}, {"1 ", 0, false}, {"1a", 0, false},
		{"000000000000000000001", 0, false},
	}
	for _, tt := range tests {
		v, ok := parseLL([]byte(tt.in))
		if v != tt.v || ok != tt.ok {
			t.Errorf("%q: got %d %v", tt.in, v, ok)
		}
	}
}
