package results

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
)

// repairTail makes f end in a newline: a final line that is complete JSON
// gets its newline, anything else after the last newline is truncated.
// It returns the number of bytes truncated.
func repairTail(f *os.File) (int64, error) {
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	size := st.Size()
	end, err := afterLastNewline(f, size)
	if err != nil || end == size {
		return 0, err
	}
	tail := make([]byte, size-end)
	if _, err := f.ReadAt(tail, end); err != nil {
		return 0, err
	}
	if json.Valid(tail) {
		_, err := f.Write([]byte{'\n'})
		return 0, err
	}
	if err := f.Truncate(end); err != nil {
		return 0, err
	}
	return size - end, f.Sync()
}

// afterLastNewline returns the offset just past the last '\n' in the
// first size bytes of f, or 0 if there is none. It reads backwards in
// blocks, so a long final line (a cell with raw samples) costs no more
// than its own length.
func afterLastNewline(f io.ReaderAt, size int64) (int64, error) {
	const block = 64 << 10
	buf := make([]byte, block)
	for end := size; end > 0; {
		start := max(end-block, 0)
		b := buf[:end-start]
		if _, err := f.ReadAt(b, start); err != nil {
			return 0, err
		}
		if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
			return start + int64(i) + 1, nil
		}
		end = start
	}
	return 0, nil
}
