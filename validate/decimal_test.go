package validate

import (
	"encoding/json"
	"math/big"
	"strings"
	"testing"
)

// decimalCases are JSON numbers, and non-numbers, whose reading must agree
// with big.Rat's, which the validator uses.
var decimalCases = []string{
	"0", "-0", "0.0", "0e5", "-0.000e-3", "1", "-1", "1.0", "1.00", "1e0", "1E2", "1e+2", "1e-2",
	"10", "100e-2", "100e-3", "12.5", "125e-1", "1250e-2", "0.05e2", "0.5e1", "5", "-5",
	"2.0000000000000000000001", "2", "1.999999999999999999999", "123456789012345678901234567890",
	"123456789012345678901234567890.5", "1e400", "1e-400", "9.99e399", "0.001", "1e-3", "-1e-3",
	"3", "3.1", "30e-1", "0.30e1", "300e-2",
	// not JSON numbers
	"", "-", "01", "1.", ".5", "1e", "1e+", "+1", "1.5.2", "0x10", "1e1000000", "1/2", "Inf", " 1",
}

func TestDecimalAgreesWithBigRat(t *testing.T) {
	for _, a := range decimalCases {
		da, okA := parseDecimal(a)
		ra, rok := new(big.Rat).SetString(a)
		if !okA {
			continue
		}
		if !rok {
			t.Errorf("%q: read as a number, big.Rat does not", a)
			continue
		}
		if da.isInt() != ra.IsInt() {
			t.Errorf("%q: integer %v, big.Rat says %v", a, da.isInt(), ra.IsInt())
		}
		for _, b := range decimalCases {
			db, okB := parseDecimal(b)
			rb, _ := new(big.Rat).SetString(b)
			if okB && da.cmp(db) != ra.Cmp(rb) {
				t.Errorf("%q vs %q: %d, big.Rat says %d", a, b, da.cmp(db), ra.Cmp(rb))
			}
		}
	}
	for _, bad := range []string{"", "-", "01", "1.", ".5", "1e", "1e+", "+1", "1.5.2", "0x10", "1/2", " 1", "1e1000000"} {
		if _, ok := parseDecimal(bad); ok {
			t.Errorf("%q read as a JSON number", bad)
		}
	}
}

func FuzzDecimal(f *testing.F) {
	for _, a := range decimalCases {
		f.Add(a, "1")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		da, okA := parseDecimal(a)
		db, okB := parseDecimal(b)
		if !okA || !okB {
			return
		}
		ra, _ := new(big.Rat).SetString(a)
		rb, _ := new(big.Rat).SetString(b)
		if ra == nil || rb == nil {
			t.Fatalf("%q or %q read as a number, not by big.Rat", a, b)
		}
		if da.isInt() != ra.IsInt() || da.cmp(db) != ra.Cmp(rb) {
			t.Fatalf("%q vs %q: int %v cmp %d; big.Rat: int %v cmp %d", a, b, da.isInt(), da.cmp(db), ra.IsInt(), ra.Cmp(rb))
		}
	})
}

// ValidNumber takes what encoding/json takes as a number, and nothing else.
func TestValidNumber(t *testing.T) {
	for _, s := range []string{"0", "-0", "1", "-12", "0.5", "1.25e10", "1E+2", "2e-7", "1e99999", "123456789012345678901234567890",
		"", "-", "01", "-01", ".5", "1.", "1.e2", "1e", "1e+", "+1", "0x1", "1_0", "NaN", "Infinity", "1 ", " 1", "1e2.5", "--1", "1.2.3"} {
		want := json.Valid([]byte(s)) && strings.TrimSpace(s) == s && s != "" && (s[0] == '-' || '0' <= s[0] && s[0] <= '9')
		if got := ValidNumber(s); got != want {
			t.Errorf("ValidNumber(%q) = %v, want %v", s, got, want)
		}
	}
}
