package results

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// A Log is what ReadLog found in a results log.
type Log struct {
	Cells    []Cell       // in order of first appearance; a repeated Key keeps its last line
	Done     map[Key]bool // keys of finished cells, for --resume
	Warnings []error      // *TruncatedLineError, repeated keys: show, don't fail
}

// A LineError is a line of a results log that is not a valid cell. Only a
// torn final line is forgiven (as a *TruncatedLineError); a bad line
// anywhere else means the file was edited or corrupted.
type LineError struct {
	File string
	Line int
	Err  error
}

func (e *LineError) Error() string {
	return fmt.Sprintf("%s:%d: %v (fix or delete the line; the log has one JSON record per line)", e.File, e.Line, e.Err)
}

func (e *LineError) Unwrap() error { return e.Err }

// A TruncatedLineError is a warning: the log ends in a partial line, left
// by a run killed while writing it. The cell on it was not finished.
type TruncatedLineError struct {
	File  string
	Line  int
	Bytes int
}

func (e *TruncatedLineError) Error() string {
	return fmt.Sprintf("%s:%d: ignoring a torn final line (%d bytes) left by an interrupted run; that cell will be measured again", e.File, e.Line, e.Bytes)
}

// ReadLogFile reads the results log at path. A missing file is an error
// that matches fs.ErrNotExist, so a --resume of a fresh run can start
// from an empty Log.
func ReadLogFile(path string) (*Log, error) {
	f, err := openLog(path, "results log")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadLog(f, path)
}

// MaxLogBytes bounds a results log or run journal: a GPU night with every
// sample kept is tens of megabytes; a device or a runaway file given by
// mistake must be an error, not a read that never ends.
const MaxLogBytes = 1 << 30

// openLog opens a log kvharness wrote for reading, bounded: a path that
// is not a regular file (a device such as /dev/zero, a folder) is refused,
// and reading past MaxLogBytes is an error.
func openLog(path, what string) (io.ReadCloser, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	if st, err := f.Stat(); err == nil && !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s %s is not a regular file; give the file kvharness bench wrote", what, path)
	}
	return &boundedFile{f: f, left: MaxLogBytes + 1, what: what}, nil
}

// boundedFile reads a file until more than MaxLogBytes were read, then
// fails.
type boundedFile struct {
	f    *os.File
	left int64
	what string
}

func (b *boundedFile) Read(p []byte) (int, error) {
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.f.Read(p)
	if b.left -= int64(n); b.left <= 0 {
		return n, fmt.Errorf("%s %s: more than %d bytes, more than kvharness writes; give the right file", b.what, b.f.Name(), MaxLogBytes)
	}
	return n, err
}

func (b *boundedFile) Close() error { return b.f.Close() }

// ReadLog reads a results log from r; name is used in messages. It
// returns a *LineError for a bad line other than a torn final one.
func ReadLog(r io.Reader, name string) (*Log, error) {
	lr := &logReader{name: name, log: &Log{Done: map[Key]bool{}}, at: map[Key]int{}}
	if err := scanLines(r, name, lr.add); err != nil {
		return nil, err
	}
	return lr.log, nil
}

// scanLines calls add for each line of r; whole is false for a final line
// without its newline.
func scanLines(r io.Reader, name string, add func(line []byte, whole bool) error) error {
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadBytes('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("read %s: %w", name, err)
		}
		if perr := add(line, err == nil); perr != nil {
			return perr
		}
		if err != nil {
			return nil
		}
	}
}

type logReader struct {
	name string
	line int
	log  *Log
	at   map[Key]int // key -> index in log.Cells
	idx  []int       // line number of each kept cell
}

// add parses one line; whole is false for a final line with no newline.
func (lr *logReader) add(line []byte, whole bool) error {
	lr.line++
	if len(bytes.TrimSpace(line)) == 0 {
		return nil
	}
	var c Cell
	err := json.Unmarshal(line, &c)
	if err == nil {
		err = c.Validate()
	}
	switch {
	case err == nil:
		lr.keep(c)
	case !whole:
		lr.log.Warnings = append(lr.log.Warnings, &TruncatedLineError{lr.name, lr.line, len(line)})
	default:
		return &LineError{lr.name, lr.line, err}
	}
	return nil
}

func (lr *logReader) keep(c Cell) {
	k := c.Key()
	if i, ok := lr.at[k]; ok {
		lr.log.Warnings = append(lr.log.Warnings, fmt.Errorf("%s:%d: cell %s repeats line %d; keeping the later line", lr.name, lr.line, k, lr.idx[i]))
		lr.log.Cells[i] = c
		lr.idx[i] = lr.line
		return
	}
	lr.at[k] = len(lr.log.Cells)
	lr.log.Cells = append(lr.log.Cells, c)
	lr.idx = append(lr.idx, lr.line)
	lr.log.Done[k] = true
}
