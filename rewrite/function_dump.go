package rewrite

import (
	"encoding/binary"
	"errors"
	"hash/crc64"
	"math/bits"
	"strconv"
)

// FUNCTION RESTORE loads libraries from a payload FUNCTION DUMP made, on
// any server: a library in it may carry no monitor, or register its own
// name__lockproxy, which an FCALL through lockproxy would then run
// unchecked. So lockproxy rewrites the payload as it rewrites FUNCTION
// LOAD: each library's code gets the monitor for the rules in force (a
// monitored library's anew), and the payload goes to Valkey with its
// version and a new checksum, so RESTORE keeps its policies and its
// all-or-nothing load.
//
// The payload, as Valkey's functionsDumpCommand writes it and
// functionRestoreCommand reads it: for each library the byte 245
// (RDB_OPCODE_FUNCTION2) and its code as an RDB string; then the RDB
// version (2 bytes, little-endian) and the CRC64 (Jones, as Valkey's
// crc64.c; 8 bytes, little-endian) of everything before it.

const rdbOpcodeFunction2 = 245

var jonesTable = crc64.MakeTable(bits.Reverse64(0xad93d23594c935a9))

// crc64Jones is Valkey's crc64(0, p): the Jones polynomial, reflected,
// no initial or final inversion.
func crc64Jones(p []byte) uint64 { return ^crc64.Update(^uint64(0), jonesTable, p) }

var errDumpPayload = errors.New("malformed function payload")

// dumpLibraries reads a FUNCTION RESTORE payload: the libraries' code,
// the version bytes, and whether its checksum is right. err is non-nil
// when the payload is not one Valkey could load.
func dumpLibraries(p []byte) (libs []string, version []byte, sumOK bool, err error) {
	if len(p) < 10 {
		return nil, nil, false, errDumpPayload
	}
	body, version := p[:len(p)-10], p[len(p)-10:len(p)-8]
	sumOK = crc64Jones(p[:len(p)-8]) == binary.LittleEndian.Uint64(p[len(p)-8:])
	for len(body) > 0 {
		if body[0] != rdbOpcodeFunction2 {
			return nil, version, sumOK, errDumpPayload
		}
		s, n, err := rdbString(body[1:])
		if err != nil {
			return nil, version, sumOK, err
		}
		libs = append(libs, string(s))
		body = body[1+n:]
	}
	return libs, version, sumOK, nil
}

// dumpPayload writes libraries' code as a FUNCTION RESTORE payload of
// the given RDB version; bad makes its checksum wrong on purpose.
func dumpPayload(libs []string, version []byte, bad bool) []byte {
	var out []byte
	for _, l := range libs {
		out = append(out, rdbOpcodeFunction2)
		out = appendRDBLen(out, uint64(len(l)))
		out = append(out, l...)
	}
	out = append(out, version...)
	sum := crc64Jones(out)
	if bad {
		sum = ^sum
	}
	return binary.LittleEndian.AppendUint64(out, sum)
}

// appendRDBLen appends an RDB length (rdbSaveLen).
func appendRDBLen(out []byte, n uint64) []byte {
	switch {
	case n < 1<<6:
		return append(out, byte(n))
	case n < 1<<14:
		return append(out, byte(n>>8)|0x40, byte(n))
	case n <= 0xffffffff:
		return binary.BigEndian.AppendUint32(append(out, 0x80), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(out, 0x81), n)
}

// rdbLen reads an RDB length (rdbLoadLenByRef): enc reports a special
// encoding, whose number n then is.
func rdbLen(p []byte) (n uint64, enc bool, used int, err error) {
	if len(p) < 1 {
		return 0, false, 0, errDumpPayload
	}
	switch p[0] >> 6 {
	case 0:
		return uint64(p[0] & 0x3f), false, 1, nil
	case 1:
		if len(p) < 2 {
			return 0, false, 0, errDumpPayload
		}
		return uint64(p[0]&0x3f)<<8 | uint64(p[1]), false, 2, nil
	case 3:
		return uint64(p[0] & 0x3f), true, 1, nil
	}
	switch {
	case p[0] == 0x80 && len(p) >= 5:
		return uint64(binary.BigEndian.Uint32(p[1:])), false, 5, nil
	case p[0] == 0x81 && len(p) >= 9:
		return binary.BigEndian.Uint64(p[1:]), false, 9, nil
	}
	return 0, false, 0, errDumpPayload
}

// rdbString reads an RDB string (rdbGenericLoadStringObject): plain, an
// integer (8, 16 or 32 bits, little-endian), or LZF-compressed.
func rdbString(p []byte) (s []byte, used int, err error) {
	n, enc, used, err := rdbLen(p)
	if err != nil {
		return nil, 0, err
	}
	p = p[used:]
	if !enc {
		if n > uint64(len(p)) {
			return nil, 0, errDumpPayload
		}
		return p[:n], used + int(n), nil
	}
	switch n {
	case 0:
		if len(p) < 1 {
			return nil, 0, errDumpPayload
		}
		return strconv.AppendInt(nil, int64(int8(p[0])), 10), used + 1, nil
	case 1:
		if len(p) < 2 {
			return nil, 0, errDumpPayload
		}
		return strconv.AppendInt(nil, int64(int16(binary.LittleEndian.Uint16(p))), 10), used + 2, nil
	case 2:
		if len(p) < 4 {
			return nil, 0, errDumpPayload
		}
		return strconv.AppendInt(nil, int64(int32(binary.LittleEndian.Uint32(p))), 10), used + 4, nil
	case 3:
		clen, e1, u1, err := rdbLen(p)
		if err != nil || e1 {
			return nil, 0, errDumpPayload
		}
		ulen, e2, u2, err := rdbLen(p[u1:])
		if err != nil || e2 || ulen == 0 || clen > uint64(len(p)-u1-u2) || ulen > 1<<30 {
			return nil, 0, errDumpPayload
		}
		out, err := lzfDecompress(p[u1+u2:u1+u2+int(clen)], int(ulen))
		if err != nil {
			return nil, 0, err
		}
		return out, used + u1 + u2 + int(clen), nil
	}
	return nil, 0, errDumpPayload
}

// lzfDecompress is liblzf's lzf_decompress, which Valkey's RDB strings
// use: the output must be exactly n bytes.
func lzfDecompress(in []byte, n int) ([]byte, error) {
	out := make([]byte, 0, n)
	for i := 0; i < len(in); {
		ctrl := int(in[i])
		i++
		if ctrl < 1<<5 { // a literal run of ctrl+1 bytes
			ctrl++
			if len(out)+ctrl > n || i+ctrl > len(in) {
				return nil, errDumpPayload
			}
			out = append(out, in[i:i+ctrl]...)
			i += ctrl
			continue
		}
		// A back reference: length ctrl>>5 (+ a byte when 7), then 2.
		l := ctrl >> 5
		ref := len(out) - (ctrl&0x1f)<<8 - 1
		if i >= len(in) {
			return nil, errDumpPayload
		}
		if l == 7 {
			l += int(in[i])
			i++
			if i >= len(in) {
				return nil, errDumpPayload
			}
		}
		ref -= int(in[i])
		i++
		l += 2
		if len(out)+l > n || ref < 0 {
			return nil, errDumpPayload
		}
		for j := 0; j < l; j++ {
			out = append(out, out[ref+j])
		}
	}
	if len(out) != n {
		return nil, errDumpPayload
	}
	return out, nil
}
