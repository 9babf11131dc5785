package validate

import "strings"

// The validator compares numbers as exact rationals (big.Rat), which costs
// allocations for every comparison. A JSON number is a decimal, and two
// decimals compare exactly by their significant digits and the position of
// their decimal point, without arithmetic: that is what the fast path does.

// decimal is a JSON number read without converting it: the value is
// 0.d1d2d3... × 10^point, where d1d2d3... are its significant digits (no
// leading or trailing zeros), taken from intPart then fracPart.
type decimal struct {
	neg               bool
	intPart, fracPart string
	first, last       int // the significant digits, as indexes into intPart+fracPart
	point             int
}

// zero reports whether the number is 0 (or -0).
func (d decimal) zero() bool { return d.first == d.last }

// digit returns the i-th digit of intPart+fracPart.
func (d decimal) digit(i int) byte {
	if i < len(d.intPart) {
		return d.intPart[i]
	}
	return d.fracPart[i-len(d.intPart)]
}

// maxExponentDigits bounds the exponents parseDecimal reads; the numbers
// validated have exponents of at most 400 (see badNumber).
const maxExponentDigits = 4

// parseDecimal reads a number in the JSON grammar; ok is false for anything
// else.
func parseDecimal(s string) (d decimal, ok bool) {
	var expDigits string
	var expNeg bool
	if d.neg, d.intPart, d.fracPart, expNeg, expDigits, ok = splitNumber(s); !ok || len(expDigits) > maxExponentDigits {
		return d, false
	}
	exp := 0
	for k := range len(expDigits) {
		exp = exp*10 + int(expDigits[k]-'0')
	}
	if expNeg {
		exp = -exp
	}
	n := len(d.intPart) + len(d.fracPart)
	for d.first < n && d.digit(d.first) == '0' {
		d.first++
	}
	d.last = n
	for d.last > d.first && d.digit(d.last-1) == '0' {
		d.last--
	}
	d.point = len(d.intPart) - d.first + exp
	return d, true
}

// ValidNumber reports whether s is a JSON number (RFC 8259, section 6).
func ValidNumber(s string) bool {
	_, _, _, _, _, ok := splitNumber(s)
	return ok
}

// splitNumber splits a number in the JSON grammar into its sign, its
// integer and fraction digits and its exponent's sign and digits; ok is
// false for anything else.
func splitNumber(s string) (neg bool, intPart, fracPart string, expNeg bool, expDigits string, ok bool) {
	if strings.HasPrefix(s, "-") {
		neg, s = true, s[1:]
	}
	i := digits(s)
	if i == 0 || (i > 1 && s[0] == '0') {
		return
	}
	intPart, s = s[:i], s[i:]
	if strings.HasPrefix(s, ".") {
		i = digits(s[1:])
		if i == 0 {
			return
		}
		fracPart, s = s[1:1+i], s[1+i:]
	}
	if s != "" {
		if s[0] != 'e' && s[0] != 'E' {
			return
		}
		s = s[1:]
		if s != "" && (s[0] == '+' || s[0] == '-') {
			expNeg, s = s[0] == '-', s[1:]
		}
		if i = digits(s); i == 0 || i != len(s) {
			return
		}
		expDigits = s
	}
	return neg, intPart, fracPart, expNeg, expDigits, true
}

// digits counts the leading ASCII digits of s.
func digits(s string) int {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}

// isInt reports whether the number is an integer, as big.Rat's IsInt does:
// 1.0 and 1e2 are integers.
func (d decimal) isInt() bool {
	return d.zero() || d.point >= d.last-d.first
}

// cmp compares two decimals exactly: -1, 0 or +1 as d is less than, equal
// to or greater than e.
func (d decimal) cmp(e decimal) int {
	switch {
	case d.zero() && e.zero():
		return 0
	case d.zero():
		return -e.sign()
	case e.zero():
		return d.sign()
	case d.neg != e.neg:
		return d.sign()
	}
	return d.sign() * d.cmpAbs(e)
}

func (d decimal) sign() int {
	if d.neg {
		return -1
	}
	return 1
}

// cmpAbs compares the magnitudes of two nonzero decimals.
func (d decimal) cmpAbs(e decimal) int {
	if d.point != e.point {
		if d.point < e.point {
			return -1
		}
		return 1
	}
	i, j := d.first, e.first
	for ; i < d.last && j < e.last; i, j = i+1, j+1 {
		if a, b := d.digit(i), e.digit(j); a != b {
			if a < b {
				return -1
			}
			return 1
		}
	}
	// The digits agree as far as both go; neither has trailing zeros, so
	// the one with more digits left is the larger.
	switch {
	case i < d.last:
		return 1
	case j < e.last:
		return -1
	}
	return 0
}
