package textsafe

import (
	"strings"
	"testing"
)

// TestWriterEscapesAcrossWrites: what reaches the terminal through Writer
// holds no control character but line breaks and tabs, however the text
// is cut into writes (a cut inside a UTF-8 sequence keeps the character
// whole), and printable text, accents and all, passes unchanged.
func TestWriterEscapesAcrossWrites(t *testing.T) {
	for in, want := range map[string]string{
		"layout\tok\nrow 1\n":                    "layout\tok\nrow 1\n",
		"name \x1b]0;pwned\x07 \x1b[2J end\n":    `name \x1b]0;pwned\a \x1b[2J end` + "\n",
		"crème brûlée · µs ≤ 2\n":                "crème brûlée · µs ≤ 2\n",
		"csi \u009b31m and \u202eevil\u202c\r\n": `csi \u009b31m and \u202eevil\u202c\r` + "\n",
		"bad \xff byte":                          `bad \xff byte`,
	} {
		for cut := range len(in) + 1 {
			var b strings.Builder
			w := &Writer{W: &b}
			w.Write([]byte(in[:cut]))
			w.Write([]byte(in[cut:]))
			w.Flush()
			if b.String() != want {
				t.Errorf("%q cut at %d: %q, want %q", in, cut, b.String(), want)
				break
			}
		}
	}
	var b strings.Builder
	w := &Writer{W: &b}
	w.Write([]byte("ends in half a rune \xe2\x89"))
	w.Flush()
	if got := b.String(); got != `ends in half a rune \xe2\x89` {
		t.Errorf("a sequence left unfinished: %q", got)
	}
}
