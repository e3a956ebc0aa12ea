package compare

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/kvharness/kvharness/harness/results"
)

func goldenReport(t *testing.T) *Report {
	slowBase, slowNew := cell(t, "slowed", 4096, 6, 200, 1.0, 1), cell(t, "slowed", 4096, 6, 200, 1.2, 2)
	sameBase, sameNew := cell(t, "same", 4096, 6, 200, 1.0, 3), cell(t, "same", 4096, 6, 200, 1.0, 4)
	fewBase, fewNew := cell(t, "few", 16, 6, 30, 0.1, 5), cell(t, "few", 16, 2, 30, 0.12, 6)
	gone := cell(t, "gone", 16, 6, 30, 0.1, 7)
	base := benchText(t, slowBase, sameBase, fewBase, gone)
	for _, c := range []*results.Cell{&slowNew, &sameNew, &fewNew} {
		c.Env.Driver = "575.51" // a driver update: warned about
	}
	return compareText(t, base, benchText(t, slowNew, sameNew, fewNew))
}

func TestWriteGolden(t *testing.T) {
	r := goldenReport(t)
	for _, f := range []Format{Text, Markdown, CSV, JSON} {
		var buf bytes.Buffer
		if err := Write(&buf, r, WriteOptions{Format: f}); err != nil {
			t.Fatal(err)
		}
		golden(t, "report-"+string(f), buf.Bytes())
	}
	var only bytes.Buffer
	if err := Write(&only, r, WriteOptions{Format: Text, OnlySlower: true}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(only.String(), "plugin=same") || !strings.Contains(only.String(), "plugin=slowed") || !strings.Contains(only.String(), "1 slower, 1 unsure, 1 same") {
		t.Errorf("--only-regressions: want the slower cell alone, and every count:\n%s", only.String())
	}
}

// TestJSONReport: the JSON report carries its schema and a verdict per
// cell.
func TestJSONReport(t *testing.T) {
	var buf bytes.Buffer
	if err := Write(&buf, goldenReport(t), WriteOptions{Format: JSON}); err != nil {
		t.Fatal(err)
	}
	var out struct {
		Schema string
		Counts map[string]int
		Cells  []struct{ Name, Verdict, Lacks string }
	}
	if err := json.Unmarshal(buf.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	if out.Schema != ReportSchema || len(out.Cells) != 4 || out.Counts["slower"] != 1 || out.Cells[2].Lacks == "" {
		t.Errorf("JSON report %+v; want %s, 4 cells, one slower, the third lacking runs", out, ReportSchema)
	}
}
