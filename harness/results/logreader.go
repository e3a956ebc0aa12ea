package results

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/kvharness/kvharness/harness/internal/inputfile"
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
	LogLine
	Err error
}

// LogLine is the line of a results log an error is about: both errors
// print it as "file:line" first, the way editors jump to it.
type LogLine struct {
	File string
	Line int
}

func (l LogLine) at() string { return fmt.Sprintf("%s:%d", l.File, l.Line) }

func (e *LineError) Error() string {
	return fmt.Sprintf("%s: %v (fix or delete the line; the log has one JSON record per line)", e.at(), e.Err)
}

func (e *LineError) Unwrap() error { return e.Err }

// A TruncatedLineError is a warning: the log ends in a partial line, left
// by a run killed while writing it. The cell on it was not finished.
type TruncatedLineError struct {
	LogLine
	Bytes int
}

func (e *TruncatedLineError) Error() string {
	return fmt.Sprintf("%s: ignoring a torn final line (%d bytes) left by an interrupted run; that cell will be measured again", e.at(), e.Bytes)
}

// ReadLogFile reads the results log at path. A missing file is an error
// that matches fs.ErrNotExist, so a --resume of a fresh run can start
// from an empty Log.
func ReadLogFile(path string) (*Log, error) {
	return readFile(path, "results log", ReadLog)
}

// readFile opens the log at path as openLog does (what names it in
// errors) and reads it with read.
func readFile[L any](path, what string, read func(r io.Reader, name string) (*L, error)) (*L, error) {
	f, err := openLog(path, what)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return read(f, path)
}

// MaxLogBytes bounds a results log or run journal: a GPU night with every
// sample kept is tens of megabytes; a device or a runaway file given by
// mistake must be an error, not a read that never ends.
const MaxLogBytes = 1 << 30

// openLog opens a log kvharness wrote for reading, bounded: a path that
// is not a regular file (a device such as /dev/zero, a folder) is refused,
// and reading past MaxLogBytes is an error.
func openLog(path, what string) (io.ReadCloser, error) {
	f, err := inputfile.Open(path, what)
	if err != nil {
		return nil, err
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
	recs, err := readRecords[Cell](r, name, func(k Key, line, earlier int) error {
		return fmt.Errorf("%s:%d: cell %s repeats line %d; keeping the later line", name, line, k, earlier)
	})
	if err != nil {
		return nil, err
	}
	return &Log{Cells: recs.list, Done: recs.done, Warnings: recs.warnings}, nil
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

// record is what a line of a log kvharness writes holds (a *Cell, a *Run):
// it checks itself and names the key a later line of the same key
// replaces it by.
type record[T any, K comparable] interface {
	*T
	Validate() error
	Key() K
}

// records is what readRecords kept of a log.
type records[T any, K comparable] struct {
	list     []T        // in order of first appearance; a repeated key keeps its last line
	done     map[K]bool // keys of the records kept
	warnings []error    // *TruncatedLineError, repeated keys
	at       map[K]int  // key -> index in list
	lines    []int      // line number of each kept record
}

// readRecords reads a log of one JSON record a line from r (name is used
// in messages), forgiving a torn final line with a *TruncatedLineError
// warning and a repeated key with the warning repeated makes (the later
// line is kept); any other bad line is a *LineError.
func readRecords[T any, K comparable, P record[T, K]](
	r io.Reader, name string, repeated func(k K, line, earlier int) error,
) (*records[T, K], error) {
	recs := &records[T, K]{done: map[K]bool{}, at: map[K]int{}}
	n := 0
	err := scanLines(r, name, func(line []byte, whole bool) error {
		n++
		if len(bytes.TrimSpace(line)) == 0 {
			return nil
		}
		var v T
		err := json.Unmarshal(line, &v)
		if err == nil {
			err = P(&v).Validate()
		}
		switch {
		case err == nil:
			recs.keep(P(&v).Key(), v, n, repeated)
		case !whole:
			recs.warnings = append(recs.warnings, &TruncatedLineError{LogLine{name, n}, len(line)})
		default:
			return &LineError{LogLine{name, n}, err}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return recs, nil
}

// keep adds v, read at line, or replaces the record of the same key k
// with a warning from repeated.
func (recs *records[T, K]) keep(k K, v T, line int, repeated func(k K, line, earlier int) error) {
	if i, ok := recs.at[k]; ok {
		recs.warnings = append(recs.warnings, repeated(k, line, recs.lines[i]))
		recs.list[i] = v
		recs.lines[i] = line
		return
	}
	recs.at[k] = len(recs.list)
	recs.list = append(recs.list, v)
	recs.lines = append(recs.lines, line)
	recs.done[k] = true
}
