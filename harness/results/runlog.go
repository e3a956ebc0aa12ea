package results

import (
	"bytes"
	"encoding/json"
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
	f, err := openLog(path, "run journal")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadRuns(f, path)
}

// ReadRuns reads a run journal from r, forgiving a torn final line as
// ReadLog does; name is used in messages.
func ReadRuns(r io.Reader, name string) (*RunLog, error) {
	rr := &runReader{name: name, log: &RunLog{Done: map[RunKey]bool{}}, at: map[RunKey]int{}}
	if err := scanLines(r, name, rr.add); err != nil {
		return nil, err
	}
	return rr.log, nil
}

type runReader struct {
	name string
	line int
	log  *RunLog
	at   map[RunKey]int
}

func (rr *runReader) add(line []byte, whole bool) error {
	rr.line++
	if len(bytes.TrimSpace(line)) == 0 {
		return nil
	}
	var r Run
	err := json.Unmarshal(line, &r)
	if err == nil {
		err = r.Validate()
	}
	switch {
	case err == nil:
		rr.keep(r)
	case !whole:
		rr.log.Warnings = append(rr.log.Warnings, &TruncatedLineError{rr.name, rr.line, len(line)})
	default:
		return &LineError{rr.name, rr.line, err}
	}
	return nil
}

func (rr *runReader) keep(r Run) {
	k := r.Key()
	if i, ok := rr.at[k]; ok {
		rr.log.Warnings = append(rr.log.Warnings, fmt.Errorf("%s:%d: run %s pass %d repeats an earlier line; keeping the later", rr.name, rr.line, k.Cell, k.Pass))
		rr.log.Runs[i] = r
		return
	}
	rr.at[k] = len(rr.log.Runs)
	rr.log.Runs = append(rr.log.Runs, r)
	rr.log.Done[k] = true
}
