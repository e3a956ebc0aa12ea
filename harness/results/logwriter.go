package results

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"syscall"
)

// A LogWriter appends records (cells, or runs) to a JSON Lines log. Each Append is
// one write of one line followed by fsync, so after a crash the log holds
// every cell whose Append returned, and at most one torn line after them.
// A LogWriter is not safe for concurrent use.
type LogWriter struct {
	f       *os.File
	dropped int64
}

// OpenLog opens path for appending, creating it if needed. If the file
// ends in a torn line left by a killed run, OpenLog cuts it off (or, if
// the line is a complete cell that lost only its newline, finishes it), so
// that new lines do not glue onto it. Dropped reports how many bytes were
// cut. A symbolic link at path is refused, not followed: the log must not
// append to whatever file a link planted in a shared folder names.
func OpenLog(path string) (*LogWriter, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW, 0o644)
	if errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("open results log: %s is a symbolic link, and kvharness appends to no file through a link: remove it", path)
	}
	if err != nil {
		return nil, fmt.Errorf("open results log: %w", err)
	}
	dropped, err := repairTail(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("repair torn end of %s: %w (move the file aside to start a fresh log)", path, err)
	}
	return &LogWriter{f: f, dropped: dropped}, nil
}

// Dropped is the number of bytes of a torn final line that OpenLog cut
// off. The cell on that line was not finished; a resumed run measures it
// again.
func (w *LogWriter) Dropped() int64 { return w.dropped }

// Append validates c, writes it as one line (schema CellSchema) and
// fsyncs the file.
func (w *LogWriter) Append(c Cell) error {
	if c.Schema == "" {
		c.Schema = CellSchema
	}
	if err := c.Validate(); err != nil {
		return fmt.Errorf("append to %s: %w", w.f.Name(), err)
	}
	return w.appendLine("cell "+string(c.Key()), c)
}

// AppendRun validates r, writes it as one line (schema RunSchema) and
// fsyncs the file.
func (w *LogWriter) AppendRun(r Run) error {
	r.Schema = RunSchema
	if err := r.Validate(); err != nil {
		return fmt.Errorf("append to %s: %w", w.f.Name(), err)
	}
	return w.appendLine(fmt.Sprintf("run %s pass %d", r.Identity.Key(), r.Pass), r)
}

func (w *LogWriter) appendLine(what string, v any) error {
	line, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("append %s to %s: %w", what, w.f.Name(), err)
	}
	if _, err := w.f.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("append %s to %s: %w", what, w.f.Name(), err)
	}
	if err := w.f.Sync(); err != nil {
		return fmt.Errorf("sync %s after %s: %w", w.f.Name(), what, err)
	}
	return nil
}

// Close closes the log.
func (w *LogWriter) Close() error { return w.f.Close() }
