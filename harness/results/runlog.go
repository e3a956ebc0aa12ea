package results

import (
	"fmt"
	"io"
)

// A RunLog is what ReadRuns found in a run journal (runs.jsonl).
type RunLog struct {
	Runs     []Run           // in order of first appearance; a repeated RunKey keeps its last line
	Done     map[RunKey]bool // runs finished, for --resume
	Warnings []error         // a torn final line, repeated runs: show, don't fail
}

// ReadRunsFile reads the run journal at path; a missing file matches
// fs.ErrNotExist.
func ReadRunsFile(path string) (*RunLog, error) {
	return readFile(path, "run journal", ReadRuns)
}

// ReadRuns reads a run journal from r, forgiving a torn final line as
// ReadLog does; name is used in messages.
func ReadRuns(r io.Reader, name string) (*RunLog, error) {
	recs, err := readRecords[Run](r, name, func(k RunKey, line, _ int) error {
		return fmt.Errorf("%s:%d: run %s pass %d repeats an earlier line; keeping the later", name, line, k.Cell, k.Pass)
	})
	if err != nil {
		return nil, err
	}
	return &RunLog{Runs: recs.list, Done: recs.done, Warnings: recs.warnings}, nil
}
