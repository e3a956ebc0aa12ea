package results

import (
	"fmt"
	"strings"
)

// Schema names of the JSON records kvharness writes, one per record type
// and version, in every record's "schema" field. A reader accepts the
// versions it knows and refuses others with the name of the version it
// found; bench/SCHEMA.md documents every field.
const (
	// CellSchema is a line of cells.jsonl: one cell of a night, every run
	// of it, its samples pooled.
	CellSchema = "kvharness.cell/v2"
	// RunSchema is a line of runs.jsonl: one pass's run of one cell, the
	// journal a killed night resumes from.
	RunSchema = "kvharness.run/v1"
	// cellSchemaV1 is the cell before runs: no "schema" field, the whole
	// cell sampled at once. It is read as one run.
	cellSchemaV1 = "kvharness.cell/v1"
)

// checkSchema accepts got when it is one of known, or empty where empty
// stands for an older record without the field ("" in known).
func checkSchema(got string, known ...string) error {
	for _, k := range known {
		if got == k {
			return nil
		}
	}
	kind, _, _ := strings.Cut(known[len(known)-1], "/")
	if !strings.HasPrefix(got, kind+"/") {
		return fmt.Errorf("schema %q: not a %s record (want %s)", got, kind, known[len(known)-1])
	}
	return fmt.Errorf("schema %s: this kvharness reads %s; use the kvharness that wrote it, or a newer one", got, strings.Join(nonEmpty(known), " and "))
}

func nonEmpty(xs []string) []string {
	var out []string
	for _, x := range xs {
		if x != "" {
			out = append(out, x)
		}
	}
	return out
}
