// Package textsafe makes text from plugins safe to print on a terminal.
//
// A plugin names itself, its variants and layouts, and answers errors in
// words of its own; the harness prints all of it. A name holding an
// escape sequence would move the cursor, recolour or retitle the user's
// terminal, or hide a line of the report. String keeps printable text as
// it is and writes every control character as a visible escape.
package textsafe

import (
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
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

// Text is String for text of several lines: line breaks are kept, every
// other control character escaped.
func Text(s string) string {
	if !strings.Contains(s, "\n") {
		return String(s)
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = String(l)
	}
	return strings.Join(lines, "\n")
}

// Writer writes what it is given to W as Text escapes it: the one place a
// command's output passes through, so that no path can print a control
// character it read from outside (a layout's name, a benchmark's, a
// plugin's crash message) raw. A write may end inside a UTF-8 sequence
// that the next completes; those bytes wait for it (Flush writes them).
type Writer struct {
	W       io.Writer
	pending []byte
}

func (w *Writer) Write(p []byte) (int, error) {
	buf := p
	if len(w.pending) > 0 {
		buf = append(w.pending, p...)
	}
	cut := len(buf) - incompleteTail(buf)
	out := buf[:cut]
	if !cleanBytes(out) {
		out = []byte(Text(string(out)))
	}
	w.pending = append(w.pending[:0:0], buf[cut:]...)
	if len(out) == 0 {
		return len(p), nil
	}
	_, err := w.W.Write(out)
	return len(p), err
}

// Flush writes the bytes of an unfinished UTF-8 sequence, escaped.
func (w *Writer) Flush() error {
	if len(w.pending) == 0 {
		return nil
	}
	out := String(string(w.pending))
	w.pending = nil
	_, err := io.WriteString(w.W, out)
	return err
}

// incompleteTail is how many bytes at the end of b begin a UTF-8
// sequence that b does not finish.
func incompleteTail(b []byte) int {
	for k := 1; k <= utf8.UTFMax-1 && k <= len(b); k++ {
		c := b[len(b)-k]
		if c < utf8.RuneSelf {
			return 0
		}
		if utf8.RuneStart(c) {
			if utf8.FullRune(b[len(b)-k:]) {
				return 0
			}
			return k
		}
	}
	return 0
}

// cleanBytes reports whether b holds nothing Text would change, without
// converting it: the fast path of nearly every write (ASCII, line breaks
// and tabs).
func cleanBytes(b []byte) bool {
	for _, c := range b {
		if c >= utf8.RuneSelf || c < 0x20 && c != '\n' && c != '\t' || c == 0x7f {
			return !bytesDirty(b)
		}
	}
	return true
}

func bytesDirty(b []byte) bool {
	for _, l := range strings.Split(string(b), "\n") {
		if !clean(l) {
			return true
		}
	}
	return false
}
