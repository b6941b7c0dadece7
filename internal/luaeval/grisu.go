package luaeval

import (
	"math"
	"math/big"
)

// Grisu2, as in fpconv (github.com/night-shift/fpconv), which Valkey ships
// as fpconv_dtoa. Grisu2 does not always find the shortest or the closest
// digits (Go's strconv does); it prints, for example, 0.000644111 as
// "0.00064411099999999998". Replies carry those digits, so luaeval runs
// the same algorithm rather than strconv.

const (
	gFracMask  = 0x000FFFFFFFFFFFFF
	gExpMask   = 0x7FF0000000000000
	gHiddenBit = 0x0010000000000000
	gExpBias   = 1023 + 52

	gNPowers    = 87
	gStepPowers = 8
	gFirstPower = -348
	gExpMax     = -32
	gExpMin     = -60
)

type diyFp struct {
	frac uint64
	exp  int
}

// cachedPowers are 10^(-348 + 8i), i = 0..86, as 64-bit normalised
// significands rounded to nearest with their binary exponents: the
// table of the Grisu paper, computed here instead of transcribed.
var cachedPowers = func() [gNPowers]diyFp {
	var t [gNPowers]diyFp
	ten := big.NewInt(10)
	for i := range t {
		e10 := gFirstPower + gStepPowers*i
		// v = 10^e10 as an exact rational.
		num, den := big.NewInt(1), big.NewInt(1)
		if e10 >= 0 {
			num.Exp(ten, big.NewInt(int64(e10)), nil)
		} else {
			den.Exp(ten, big.NewInt(int64(-e10)), nil)
		}
		// Choose e2 so that v / 2^e2 lies in [2^63, 2^64).
		e2 := num.BitLen() - den.BitLen() - 64
		for {
			n, d := new(big.Int).Set(num), new(big.Int).Set(den)
			if e2 >= 0 {
				d.Lsh(d, uint(e2))
			} else {
				n.Lsh(n, uint(-e2))
			}
			q, r := new(big.Int).QuoRem(n, d, new(big.Int))
			if q.BitLen() > 64 {
				e2++
				continue
			}
			if q.BitLen() < 64 {
				e2--
				continue
			}
			// Round to nearest (ties cannot occur for powers of ten).
			if r.Lsh(r, 1).Cmp(d) >= 0 {
				q.Add(q, big.NewInt(1))
				if q.BitLen() > 64 {
					q.Rsh(q, 1)
					e2++
				}
			}
			t[i] = diyFp{q.Uint64(), e2}
			break
		}
	}
	return t
}()

var tens = [20]uint64{
	10000000000000000000, 1000000000000000000, 100000000000000000,
	10000000000000000, 1000000000000000, 100000000000000,
	10000000000000, 1000000000000, 100000000000,
	10000000000, 1000000000, 100000000,
	10000000, 1000000, 100000,
	10000, 1000, 100,
	10, 1,
}

func findCachedPow10(exp int) (diyFp, int) {
	const oneLogTen = 0.30102999566398114
	approx := int(float64(-(exp + gNPowers)) * oneLogTen) // C truncation
	idx := (approx - gFirstPower) / gStepPowers
	for {
		current := exp + cachedPowers[idx].exp + 64
		if current < gExpMin {
			idx++
			continue
		}
		if current > gExpMax {
			idx--
			continue
		}
		return cachedPowers[idx], gFirstPower + idx*gStepPowers
	}
}

func buildFp(d float64) diyFp {
	b := math.Float64bits(d)
	fp := diyFp{frac: b & gFracMask, exp: int((b & gExpMask) >> 52)}
	if fp.exp != 0 {
		fp.frac += gHiddenBit
		fp.exp -= gExpBias
	} else {
		fp.exp = -gExpBias + 1
	}
	return fp
}

func (fp *diyFp) normalize() {
	for fp.frac&gHiddenBit == 0 {
		fp.frac <<= 1
		fp.exp--
	}
	const shift = 64 - 52 - 1
	fp.frac <<= shift
	fp.exp -= shift
}

func normalizedBoundaries(fp diyFp) (lower, upper diyFp) {
	upper.frac = (fp.frac << 1) + 1
	upper.exp = fp.exp - 1
	for upper.frac&(gHiddenBit<<1) == 0 {
		upper.frac <<= 1
		upper.exp--
	}
	const uShift = 64 - 52 - 2
	upper.frac <<= uShift
	upper.exp -= uShift

	lShift := 1
	if fp.frac == gHiddenBit {
		lShift = 2
	}
	lower.frac = (fp.frac << lShift) - 1
	lower.exp = fp.exp - lShift
	lower.frac <<= uint(lower.exp - upper.exp)
	lower.exp = upper.exp
	return lower, upper
}

// multiply is fpconv's 64×64 product keeping the high half, rounded.
func multiply(a, b diyFp) diyFp {
	const lomask = 0x00000000FFFFFFFF
	ahBl := (a.frac >> 32) * (b.frac & lomask)
	alBh := (a.frac & lomask) * (b.frac >> 32)
	alBl := (a.frac & lomask) * (b.frac & lomask)
	ahBh := (a.frac >> 32) * (b.frac >> 32)
	tmp := (ahBl & lomask) + (alBh & lomask) + (alBl >> 32)
	tmp += 1 << 31 // round up
	return diyFp{ahBh + (ahBl >> 32) + (alBh >> 32) + (tmp >> 32), a.exp + b.exp + 64}
}

func roundDigit(digits []byte, delta, rem, kappa, frac uint64) {
	n := len(digits)
	for rem < frac && delta-rem >= kappa && (rem+kappa < frac || frac-rem > rem+kappa-frac) {
		digits[n-1]--
		rem += kappa
	}
}

func generateDigits(fp, upper, lower diyFp, K int) ([]byte, int) {
	wfrac := upper.frac - fp.frac
	delta := upper.frac - lower.frac
	oneShift := uint(-upper.exp)
	oneFrac := uint64(1) << oneShift

	part1 := upper.frac >> oneShift
	part2 := upper.frac & (oneFrac - 1)

	digits := make([]byte, 0, 18)
	kappa := 10
	for i := 10; kappa > 0; i++ {
		div := tens[i]
		digit := part1 / div
		if digit != 0 || len(digits) > 0 {
			digits = append(digits, byte(digit)+'0')
		}
		part1 -= digit * div
		kappa--
		tmp := (part1 << oneShift) + part2
		if tmp <= delta {
			K += kappa
			roundDigit(digits, delta, tmp, div<<oneShift, wfrac)
			return digits, K
		}
	}
	unit := 18
	for {
		part2 *= 10
		delta *= 10
		kappa--
		digit := part2 >> oneShift
		if digit != 0 || len(digits) > 0 {
			digits = append(digits, byte(digit)+'0')
		}
		part2 &= oneFrac - 1
		if part2 < delta {
			K += kappa
			roundDigit(digits, delta, part2, oneFrac, wfrac*tens[unit])
			return digits, K
		}
		unit--
	}
}

// grisu2 returns the digits of a finite, non-zero d and the decimal
// exponent K such that |d| ≈ digits × 10^K.
func grisu2(d float64) ([]byte, int) {
	w := buildFp(d)
	lower, upper := normalizedBoundaries(w)
	w.normalize()
	cp, k := findCachedPow10(upper.exp)
	w = multiply(w, cp)
	upper = multiply(upper, cp)
	lower = multiply(lower, cp)
	lower.frac++
	upper.frac--
	return generateDigits(w, upper, lower, -k)
}
