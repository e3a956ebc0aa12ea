package store

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/report"
)

// maxMapPages bounds the pages drawn.
const maxMapPages = 4

// writePageMap draws the pages the case touches, a character per slot:
//
//	V  a valid row, stored correctly     !  a violation in this slot
//	p  a padded row's target, untouched  .  a slot no row targets
//
// Guard zones before and after the pool are shown as [guard] when written.
func writePageMap(w io.Writer, l *layout.Layout, c *Case, vs []oracle.Violation) {
	marks := slotMarks(c, vs)
	pages := pagesOf(l, marks)
	if len(pages) == 0 || l.PageSize > 128 {
		return
	}
	fmt.Fprintf(w, "  page map (V valid, ! violation, p padded target, . untouched):\n")
	report.WriteCapped(w, len(pages), maxMapPages, "more pages", func(i int) {
		fmt.Fprintf(w, "    %s\n", pageLine(l, pages[i], marks))
	})
}

func slotMarks(c *Case, vs []oracle.Violation) map[int64]byte {
	m := map[int64]byte{}
	for i, s := range c.Loc {
		if i < c.Valid {
			m[s] = 'V'
		} else if _, ok := m[s]; !ok {
			m[s] = 'p'
		}
	}
	for _, v := range vs {
		if v.HasSlot && v.Kind != oracle.Determinism && v.Kind != oracle.Differential {
			m[v.Slot] = '!'
		}
	}
	return m
}

func pagesOf(l *layout.Layout, marks map[int64]byte) []int64 {
	seen := map[int64]bool{}
	var pages []int64
	for s := range marks {
		q, _ := layout.FloorDiv(int(s), l.PageSize)
		p := int64(q)
		if !seen[p] {
			seen[p] = true
			pages = append(pages, p)
		}
	}
	sort.Slice(pages, func(i, j int) bool { return pages[i] < pages[j] })
	return pages
}

func pageLine(l *layout.Layout, page int64, marks map[int64]byte) string {
	p := int64(l.PageSize)
	var b strings.Builder
	for s := page * p; s < (page+1)*p; s++ {
		if m, ok := marks[s]; ok {
			b.WriteByte(m)
		} else {
			b.WriteByte('.')
		}
	}
	label := fmt.Sprintf("page %d (slots %d..%d)", page, page*p, (page+1)*p-1)
	if page < 0 {
		label = fmt.Sprintf("guard before the pool (slots %d..%d)", page*p, (page+1)*p-1)
	}
	return fmt.Sprintf("%-34s %s", label, b.String())
}
