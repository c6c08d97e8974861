package catalog

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
)

// Price is an exact, non-negative decimal number of units per token.
//
// It keeps the decimal text it was read from, not a float64 or even a
// big.Rat: the text is both the exact value and what MarshalJSON writes back,
// so a catalogue round-trips byte for byte, and a Price is an immutable value
// that can be copied freely. The zero Price is 0.
type Price struct {
	text string // a validated non-negative JSON number; "" means 0
}

// ParsePrice reads a price from the text of a JSON number, e.g. "0.00015" or
// "15e-5". Anything else (strings, fractions like "1/3", negative numbers) is
// refused.
func ParsePrice(s string) (Price, error) {
	// json.Valid plus a number's first character keeps the text something
	// MarshalJSON can write back verbatim; big.Rat.SetString alone would also
	// take "1/3" or "0x10".
	if s == "" || !json.Valid([]byte(s)) || !(s[0] == '-' || '0' <= s[0] && s[0] <= '9') {
		return Price{}, fmt.Errorf("%q is not a JSON number", s)
	}
	if s[0] == '-' {
		return Price{}, fmt.Errorf("%s is negative", s)
	}
	// SetString caps exponents (at 1e6), so a hostile "1e999999999" fails
	// here instead of allocating a huge number.
	if _, ok := new(big.Rat).SetString(s); !ok {
		return Price{}, fmt.Errorf("%s is out of range", s)
	}
	return Price{text: s}, nil
}

func mustPrice(s string) Price {
	p, err := ParsePrice(s)
	if err != nil {
		panic(err)
	}
	return p
}

func pricePtr(s string) *Price {
	p := mustPrice(s)
	return &p
}

// Rat returns the exact value; the caller owns the result.
func (p Price) Rat() *big.Rat {
	r, _ := new(big.Rat).SetString(p.String()) // validated by ParsePrice
	return r
}

// String returns the decimal text the price was read from.
func (p Price) String() string {
	if p.text == "" {
		return "0"
	}
	return p.text
}

// MarshalJSON writes the original decimal text as a JSON number.
func (p Price) MarshalJSON() ([]byte, error) { return []byte(p.String()), nil }

// UnmarshalJSON takes the raw number token, never going through float64.
// Strings and null are refused: a price must be written as a number.
func (p *Price) UnmarshalJSON(data []byte) error {
	if len(data) > 0 && data[0] == '"' {
		return errors.New("must be a JSON number, not a string")
	}
	q, err := ParsePrice(string(data))
	if err != nil {
		return fmt.Errorf("must be a non-negative JSON number: %w", err)
	}
	*p = q
	return nil
}
