package reward

import (
	"math"
	"strconv"
	"strings"
)

// NumberAnswer writes a reference answer that a dataset stores as a number (a JSON number such as
// 27.0, a float column) as answer text: integers without a fractional part (27), other values in
// their shortest decimal form (2.5). ok is false when literal is not a finite number.
func NumberAnswer(literal string) (text string, ok bool) {
	literal = strings.TrimSpace(literal)
	f, err := strconv.ParseFloat(literal, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return "", false
	}
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return strconv.FormatInt(int64(f), 10), true
	}
	return strconv.FormatFloat(f, 'f', -1, 64), true
}
