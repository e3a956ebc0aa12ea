package plot

import (
	"fmt"
	"strings"

	"github.com/kvharness/kvharness/harness/results"
)

// defaultLabel is used when no field differs between the cells plotted.
var defaultLabel = map[string]bool{"plugin": true, "layout": true, "mode": true}

// labels names each cell by the fields (other than skip) whose values
// differ between cells, in name order: "plugin=a mode=graph". When none
// differ, as with one cell, it uses plugin, layout and mode.
func labels(cells []results.Cell, skip string) []string {
	maps := make([]map[string]string, len(cells))
	for i, c := range cells {
		maps[i] = fieldMap(c, skip)
	}
	vary := map[string]bool{}
	for _, m := range maps[1:] {
		markDiff(vary, m, maps[0])
		markDiff(vary, maps[0], m)
	}
	if len(vary) == 0 {
		vary = defaultLabel
	}
	out := make([]string, len(cells))
	for i, c := range cells {
		out[i] = label(c, vary)
	}
	return numberRepeats(out)
}

// numberRepeats appends " #2", " #3"... to repeated labels, as when the
// same cell from two runs is plotted.
func numberRepeats(ls []string) []string {
	count := map[string]int{}
	for i, l := range ls {
		count[l]++
		if count[l] > 1 {
			ls[i] = fmt.Sprintf("%s #%d", l, count[l])
		}
	}
	return ls
}

// fieldMap is a cell's name fields by key, leaving out skip.
func fieldMap(c results.Cell, skip string) map[string]string {
	m := map[string]string{}
	for _, f := range c.Fields() {
		if f.Key != skip {
			m[f.Key] = f.Value
		}
	}
	return m
}

// markDiff marks the keys of a whose values b does not share.
func markDiff(vary map[string]bool, a, b map[string]string) {
	for k, v := range a {
		if b[k] != v {
			vary[k] = true
		}
	}
}

func label(c results.Cell, vary map[string]bool) string {
	var parts []string
	for _, f := range c.Fields() {
		if vary[f.Key] {
			parts = append(parts, f.Key+"="+f.Value)
		}
	}
	return strings.Join(parts, " ")
}
