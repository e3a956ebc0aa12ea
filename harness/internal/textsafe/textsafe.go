// Package textsafe makes text from plugins safe to print on a terminal.
//
// A plugin names itself, its variants and layouts, and answers errors in
// words of its own; the harness prints all of it. A name holding an
// escape sequence would move the cursor, recolour or retitle the user's
// terminal, or hide a line of the report. String keeps printable text as
// it is and writes every control character as a visible escape.
package textsafe

import (
	"strconv"
	"strings"
	"unicode"
)

// String returns s with every control character other than tab, and
// every byte that is not UTF-8, written as a Go escape (\x1b, \u009b): the
// text reads the same, and nothing in it reaches the terminal as a
// command.
func String(s string) string {
	if clean(s) {
		return s
	}
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == unicode.ReplacementChar && !strings.HasPrefix(s[i:], "\uFFFD"):
			b.WriteString(`\x` + strconv.FormatUint(uint64(s[i]), 16))
		case r != '\t' && (unicode.IsControl(r) || r == '\u2028' || r == '\u2029' || unicode.Is(unicode.Bidi_Control, r)):
			q := strconv.QuoteRuneToASCII(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func clean(s string) bool {
	for _, r := range s {
		if r == unicode.ReplacementChar || r != '\t' && (unicode.IsControl(r) || r == '\u2028' || r == '\u2029' || unicode.Is(unicode.Bidi_Control, r)) {
			return false
		}
	}
	return true
}
