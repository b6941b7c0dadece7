package resp

// Value is a decoded reply, for the few replies the proxy inspects and for
// tests. Decoding allocates; the forwarding path uses Framer instead.
type Value struct {
	Type  byte    // the RESP type byte: + - : $ * _ , # ! = ( % ~ > |
	Str   []byte  // simple/bulk/error/verbatim/double/bignum text
	Int   int64   // ':' value; 1 or 0 for '#'
	Null  bool    // "_", "$-1" or "*-1"
	Elems []Value // arrays, sets, pushes; maps as k1,v1,k2,v2...
	Attrs []Value // attribute pairs preceding the value, if any
}

// Parse decodes the first reply in b and reports how many bytes it used;
// (Value{}, 0, nil) means b holds only part of a reply.
//
// Str of an error is the text after '-'; of a verbatim string ('='), the
// whole payload including its "txt:" prefix. An attribute ('|') is not a
// Value of its own: its pairs land in Attrs of the value it annotates.
// Strings are copied into one allocation, so the Value does not alias b.
//
// Parse first frames the reply with a Framer, which validates it without
// recursion; decoding a complete, valid reply then uses an explicit stack
// and sizes every slice from elements that are actually present.
func Parse(b []byte) (Value, int, error) {
	var f Framer
	n, err := f.Frame(b)
	if n == 0 || err != nil {
		return Value{}, 0, err
	}
	return decode(b[:n]), n, nil
}

// open is an aggregate being decoded.
type open struct {
	v     Value
	left  int64
	attr  bool    // collecting attribute pairs rather than a value
	attrs []Value // attribute pairs waiting for the next element
}

// decode decodes one complete, framed reply.
func decode(b []byte) Value {
	// One backing array for every string: their total is below len(b), so
	// appends never reallocate and earlier Str slices stay valid.
	arena := make([]byte, 0, len(b))
	str := func(s []byte) []byte {
		at := len(arena)
		arena = append(arena, s...)
		return arena[at:len(arena):len(arena)]
	}
	var stack []open
	var topAttrs []Value
	pending := func() *[]Value {
		if len(stack) == 0 {
			return &topAttrs
		}
		return &stack[len(stack)-1].attrs
	}
	pos := 0
	for {
		t := b[pos]
		cr := indexCR(b, pos+1)
		line := b[pos+1 : cr]
		pos = cr + 2
		var v Value
		v.Type = t
		switch t {
		case '+', '-', ',', '(':
			v.Str = str(line)
		case ':':
			v.Int, _ = parseReplyInt(line)
		case '#':
			if line[0] == 't' {
				v.Int = 1
			}
		case '_':
			v.Null = true
		case '$', '!', '=':
			n, _ := countLine(t, line)
			if n < 0 {
				v.Null = true
				break
			}
			v.Str = str(b[pos : pos+int(n)])
			pos += int(n) + 2
		case '*', '%', '~', '>', '|':
			n, _ := countLine(t, line)
			if n < 0 {
				v.Null = true
				break
			}
			if t == '%' || t == '|' {
				n *= 2
			}
			if t == '|' {
				if n > 0 {
					stack = append(stack, open{v: Value{Elems: make([]Value, 0, n)}, left: n, attr: true})
				}
				continue
			}
			if n > 0 {
				o := open{v: v, left: n}
				p := pending()
				o.v.Attrs, *p = *p, nil
				// n is backed by bytes already framed, so it is a safe
				// capacity hint.
				o.v.Elems = make([]Value, 0, n)
				stack = append(stack, o)
				continue
			}
			v.Elems = []Value{}
		}
		// v is complete: attach waiting attributes and hand it upward,
		// closing every aggregate it completes.
		for {
			if p := pending(); *p != nil {
				v.Attrs, *p = *p, nil
			}
			if len(stack) == 0 {
				return v
			}
			top := &stack[len(stack)-1]
			top.v.Elems = append(top.v.Elems, v)
			if top.left--; top.left > 0 {
				break
			}
			done := *top
			stack = stack[:len(stack)-1]
			if done.attr {
				p := pending()
				*p = append(*p, done.v.Elems...)
				break
			}
			v = done.v
		}
	}
}

// AppendValue appends v in RESP. Attributes are written before the value,
// nulls in the form their Type implies ("$-1", "*-1" or "_").
func AppendValue(dst []byte, v Value) []byte {
	// Iterative, like Parse: a Value may come from a deeply nested reply.
	stack := [][]Value{{v}}
	for len(stack) > 0 {
		top := len(stack) - 1
		if len(stack[top]) == 0 {
			stack = stack[:top]
			continue
		}
		v := stack[top][0]
		stack[top] = stack[top][1:]
		if len(v.Attrs) > 0 {
			dst = appendLen(dst, '|', int64(len(v.Attrs)/2))
			bare := v
			bare.Attrs = nil
			// The pairs first (top of the stack), then the value itself.
			stack = append(stack, []Value{bare}, v.Attrs)
			continue
		}
		switch v.Type {
		case '+', '-', ',', '(':
			dst = append(dst, v.Type)
			dst = append(dst, v.Str...)
			dst = append(dst, '\r', '\n')
		case ':':
			dst = appendLen(dst, ':', v.Int)
		case '#':
			b := byte('f')
			if v.Int != 0 {
				b = 't'
			}
			dst = append(dst, '#', b, '\r', '\n')
		case '_':
			dst = append(dst, '_', '\r', '\n')
		case '$', '!', '=':
			if v.Null {
				dst = append(dst, v.Type, '-', '1', '\r', '\n')
				break
			}
			dst = appendLen(dst, v.Type, int64(len(v.Str)))
			dst = append(dst, v.Str...)
			dst = append(dst, '\r', '\n')
		default: // aggregates
			if v.Null {
				dst = append(dst, v.Type, '-', '1', '\r', '\n')
				break
			}
			n := int64(len(v.Elems))
			if v.Type == '%' {
				n /= 2
			}
			dst = appendLen(dst, v.Type, n)
			if len(v.Elems) > 0 {
				stack = append(stack, v.Elems)
			}
		}
	}
	return dst
}
