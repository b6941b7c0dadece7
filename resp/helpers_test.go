package resp

import (
	"errors"
	"io"
	"math/rand/v2"
)

// oneByteReader hands out its data one byte per Read: the worst case a
// network can produce.
type oneByteReader struct{ data []byte }

func (o *oneByteReader) Read(p []byte) (int, error) {
	if len(o.data) == 0 {
		return 0, io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	p[0] = o.data[0]
	o.data = o.data[1:]
	return 1, nil
}

// chunkReader hands out its data in random-sized pieces.
type chunkReader struct {
	data []byte
	rng  *rand.Rand
	max  int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := 1 + c.rng.IntN(c.max)
	n = min(n, len(p), len(c.data))
	copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

// result is what one ReadCommand produced, copied out of the Reader.
type result struct {
	args [][]byte
	raw  []byte
	err  string
}

// readAll reads commands until an error, copying each one.
func readAll(r *Reader) []result {
	var out []result
	for {
		cmd, err := r.ReadCommand()
		if err != nil {
			msg := err.Error()
			var pe *ProtocolError
			if !errors.As(err, &pe) && err != io.EOF && err != io.ErrUnexpectedEOF {
				msg = "read error: " + msg
			}
			out = append(out, result{err: msg})
			return out
		}
		res := result{raw: append([]byte(nil), cmd.Raw...)}
		for _, a := range cmd.Args {
			res.args = append(res.args, append([]byte{}, a...))
		}
		out = append(out, res)
	}
}

func strs(args [][]byte) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = string(a)
	}
	return out
}
