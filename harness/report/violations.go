package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/kvharness/kvharness/harness/oracle"
)

// MaxViolations bounds the violations printed for one failure; the repro
// file and JSON output keep the first ones too.
const MaxViolations = 6

// Shown is one violation as a report prints it: its line, and the want/got
// hex lines below it (none when it has no bytes to show).
type Shown struct {
	Line string
	Diff []string
}

// WriteViolations prints "N violations:" and the first MaxViolations.
func WriteViolations(w io.Writer, vs []Shown) {
	fmt.Fprintf(w, "  %d violation%s:\n", len(vs), Plural(len(vs)))
	WriteCapped(w, len(vs), MaxViolations, "more", func(i int) {
		fmt.Fprintf(w, "    %s\n", vs[i].Line)
		for _, line := range vs[i].Diff {
			fmt.Fprintf(w, "      %s\n", line)
		}
	})
}

// WriteCapped prints the first most of a list's n entries, each by
// entry(i), and then how many it left out ("    … 3 more", more naming
// them): a report stays readable, and says what the repro file holds
// beyond it.
func WriteCapped(w io.Writer, n, most int, more string, entry func(i int)) {
	for i := range min(n, most) {
		entry(i)
	}
	if n > most {
		fmt.Fprintf(w, "    … %d %s\n", n-most, more)
	}
}

// Plural is "s" unless n is 1.
func Plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// HexDiff prints want and got 16 bytes a line, go-cmp style, with ^ under
// the bytes that differ; offsets are v.Off's.
func HexDiff(v oracle.Violation) []string {
	if len(v.Want) == 0 && len(v.Got) == 0 {
		return nil
	}
	var out []string
	for lo := 0; lo < max(len(v.Want), len(v.Got)); lo += 16 {
		want, got := window(v.Want, lo), window(v.Got, lo)
		out = append(out, fmt.Sprintf("- want @%-6d %s", v.Off+lo, hexBytes(want)))
		out = append(out, fmt.Sprintf("+ got  @%-6d %s", v.Off+lo, hexBytes(got)))
		if marks := diffMarks(want, got); strings.TrimSpace(marks) != "" {
			out = append(out, "               "+marks)
		}
	}
	return out
}

func window(b []byte, lo int) []byte {
	if lo >= len(b) {
		return nil
	}
	return b[lo:min(lo+16, len(b))]
}

func hexBytes(b []byte) string {
	if b == nil {
		return "(background)"
	}
	parts := make([]string, len(b))
	for i, x := range b {
		parts[i] = fmt.Sprintf("%02x", x)
	}
	return strings.Join(parts, " ")
}

func diffMarks(a, b []byte) string {
	var s strings.Builder
	for i := range max(len(a), len(b)) {
		if i < len(a) && i < len(b) && a[i] == b[i] {
			s.WriteString("   ")
		} else {
			s.WriteString("^^ ")
		}
	}
	return strings.TrimRight(s.String(), " ")
}
