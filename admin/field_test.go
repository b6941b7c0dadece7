package admin

import "testing"

func TestEncode(t *testing.T) {
	rec := []Field{
		{"s", "x"},
		{"n", int64(-7)},
		{"null", nil},
		{"list", []string{"a", "b"}},
		{"rec", []Field{{"k", "v"}}},
		{"recs", [][]Field{{{"a", int64(1)}}, {}}},
	}
	cases := []struct {
		proto int
		want  string
	}{
		{2, "*12\r\n$1\r\ns\r\n$1\r\nx\r\n$1\r\nn\r\n$2\r\n-7\r\n$4\r\nnull\r\n$-1\r\n" +
			"$4\r\nlist\r\n*2\r\n$1\r\na\r\n$1\r\nb\r\n$3\r\nrec\r\n*2\r\n$1\r\nk\r\n$1\r\nv\r\n" +
			"$4\r\nrecs\r\n*2\r\n*2\r\n$1\r\na\r\n$1\r\n1\r\n*0\r\n"},
		{3, "%6\r\n$1\r\ns\r\n$1\r\nx\r\n$1\r\nn\r\n:-7\r\n$4\r\nnull\r\n_\r\n" +
			"$4\r\nlist\r\n*2\r\n$1\r\na\r\n$1\r\nb\r\n$3\r\nrec\r\n%1\r\n$1\r\nk\r\n$1\r\nv\r\n" +
			"$4\r\nrecs\r\n*2\r\n%1\r\n$1\r\na\r\n:1\r\n%0\r\n"},
	}
	for _, c := range cases {
		if got := string(Encode(nil, rec, c.proto)); got != c.want {
			t.Errorf("RESP%d:\n got %q\nwant %q", c.proto, got, c.want)
		}
	}
}

func TestEncodeValuePanicsOnOtherTypes(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("an int (not int64) was encoded")
		}
	}()
	EncodeValue(nil, 3, 2)
}
