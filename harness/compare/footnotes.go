package compare

import (
	"fmt"
	"strconv"
	"strings"
)

// footnotes numbers distinct warning messages in order of first use.
type footnotes struct {
	index map[string]int
	texts []string
}

// marks returns the footnote marks for errs, such as " [1][2]".
func (f *footnotes) marks(errs []error) string {
	var b strings.Builder
	seen := map[int]bool{}
	for _, err := range errs {
		n := f.number(err.Error())
		if !seen[n] {
			seen[n] = true
			b.WriteString("[" + strconv.Itoa(n) + "]")
		}
	}
	if b.Len() == 0 {
		return ""
	}
	return " " + b.String()
}

func (f *footnotes) number(msg string) int {
	if n, ok := f.index[msg]; ok {
		return n
	}
	f.texts = append(f.texts, msg)
	f.index[msg] = len(f.texts)
	return len(f.texts)
}

func (f *footnotes) write(b *strings.Builder) {
	for i, t := range f.texts {
		fmt.Fprintf(b, "[%d] %s\n", i+1, t)
	}
}
