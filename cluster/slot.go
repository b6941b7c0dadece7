package cluster

// SlotCount is the number of hash slots of every Valkey Cluster.
const SlotCount = 16384

// Slot returns the hash slot of key as Valkey computes it (cluster.c
// keyHashSlot): CRC16 (XMODEM) of the key modulo 16384, or of its hash tag
// — the bytes between the first '{' and the first '}' after it — when that
// tag is not empty.
func Slot(key []byte) uint16 {
	for i, c := range key {
		if c != '{' {
			continue
		}
		for j := i + 1; j < len(key); j++ {
			if key[j] == '}' {
				if j > i+1 {
					key = key[i+1 : j]
				}
				return crc16(key) & (SlotCount - 1)
			}
		}
		break
	}
	return crc16(key) & (SlotCount - 1)
}

// crc16 is CRC-16/XMODEM (polynomial 0x1021, initial value 0), the one
// Valkey's crc16.c implements, table-driven.
func crc16(b []byte) uint16 {
	var crc uint16
	for _, c := range b {
		crc = crc<<8 ^ crcTable[byte(crc>>8)^c]
	}
	return crc
}

var crcTable = func() (t [256]uint16) {
	for i := range t {
		crc := uint16(i) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
		t[i] = crc
	}
	return t
}()
