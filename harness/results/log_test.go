package results

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// mustOpenLog is OpenLog for a test, fatal on failure.
func mustOpenLog(t *testing.T, path string) *LogWriter {
	t.Helper()
	w, err := OpenLog(path)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func writeLog(t *testing.T, path string, cells ...Cell) {
	t.Helper()
	w := mustOpenLog(t, path)
	for _, c := range cells {
		if err := w.Append(c); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func appendRaw(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

func TestLogRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cells.jsonl")
	a, b := testCell(t, "a", 16, 30, 1000), testCell(t, "b", 16, 30, 2000)
	b.Samples = nil // samples are optional
	writeLog(t, path, a)
	writeLog(t, path, b) // a second open appends
	log, err := ReadLogFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(log.Warnings) != 0 {
		t.Errorf("warnings on a clean log: %v", log.Warnings)
	}
	if !reflect.DeepEqual(log.Cells, []Cell{a, b}) {
		t.Errorf("read back cells differ:\n got %+v\nwant %+v", log.Cells, []Cell{a, b})
	}
	if !log.Done[a.Key()] || !log.Done[b.Key()] || len(log.Done) != 2 {
		t.Errorf("Done = %v, want both keys", log.Done)
	}
}

func TestLogTornFinalLineIsWarning(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cells.jsonl")
	a, b := testCell(t, "a", 16, 10, 1000), testCell(t, "b", 16, 10, 1000)
	writeLog(t, path, a)
	appendRaw(t, path, `{"plugin":"b","plugin_version":"1.2.0","kern`) // killed mid-write
	log, err := ReadLogFile(path)
	if err != nil {
		t.Fatalf("torn final line is an error: %v", err)
	}
	var torn *TruncatedLineError
	if len(log.Warnings) != 1 || !errors.As(log.Warnings[0], &torn) || torn.Line != 2 {
		t.Fatalf("warnings = %v, want one TruncatedLineError on line 2", log.Warnings)
	}
	if len(log.Cells) != 1 || !log.Done[a.Key()] || log.Done[b.Key()] {
		t.Errorf("cells %d, done %v: want only a finished", len(log.Cells), log.Done)
	}

	// Resuming: OpenLog cuts the torn line so b's line starts clean.
	w := mustOpenLog(t, path)
	if w.Dropped() != 44 {
		t.Errorf("Dropped() = %d, want the 44 torn bytes", w.Dropped())
	}
	if err := w.Append(b); err != nil {
		t.Fatal(err)
	}
	w.Close()
	log, err = ReadLogFile(path)
	if err != nil || len(log.Warnings) != 0 || len(log.Cells) != 2 {
		t.Errorf("after resume: err %v, warnings %v, %d cells; want 2 clean cells", err, log.Warnings, len(log.Cells))
	}
}

func TestLogCompleteLineMissingNewline(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cells.jsonl")
	a := testCell(t, "a", 16, 10, 1000)
	writeLog(t, path, a)
	data, _ := os.ReadFile(path)
	os.WriteFile(path, data[:len(data)-1], 0o644) // lost only the newline
	log, err := ReadLogFile(path)
	if err != nil || len(log.Cells) != 1 || len(log.Warnings) != 0 {
		t.Fatalf("complete final cell without newline: err %v, %d cells, warnings %v", err, len(log.Cells), log.Warnings)
	}
	w := mustOpenLog(t, path)
	w.Close()
	if after, _ := os.ReadFile(path); string(after) != string(data) || w.Dropped() != 0 {
		t.Errorf("OpenLog should restore the newline, not drop the cell (dropped %d)", w.Dropped())
	}
}

func TestLogBadMiddleLineIsError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cells.jsonl")
	writeLog(t, path, testCell(t, "a", 16, 10, 1000))
	appendRaw(t, path, "{not json}\n")
	writeLog(t, path, testCell(t, "b", 16, 10, 1000))
	_, err := ReadLogFile(path)
	var le *LineError
	if !errors.As(err, &le) || le.Line != 2 || !strings.HasPrefix(err.Error(), path+":2: ") {
		t.Errorf("error = %v, want a LineError at %s:2", err, path)
	}
}

func TestLogInvalidCellIsError(t *testing.T) {
	_, err := ReadLog(strings.NewReader(`{"plugin":"p","kernel":"store"}`+"\n"), "x.jsonl")
	var le *LineError
	if !errors.As(err, &le) || le.Line != 1 {
		t.Errorf("error = %v, want a LineError at x.jsonl:1", err)
	}
}

func TestLogRepeatedCellKeepsLater(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cells.jsonl")
	first, other, again := testCell(t, "a", 16, 10, 1000), testCell(t, "b", 16, 10, 1000), testCell(t, "a", 16, 10, 5000)
	writeLog(t, path, first, other, again)
	log, err := ReadLogFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(log.Cells) != 2 || log.Cells[0].Summary.P50 != again.Summary.P50 {
		t.Errorf("got %d cells, first P50 %v; want 2 with the later a", len(log.Cells), log.Cells[0].Summary.P50)
	}
	if len(log.Warnings) != 1 || !strings.Contains(log.Warnings[0].Error(), ":3: cell Store/plugin=a") {
		t.Errorf("warnings = %v, want one about line 3 repeating a", log.Warnings)
	}
}

func TestReadLogFileMissing(t *testing.T) {
	_, err := ReadLogFile(filepath.Join(t.TempDir(), "none.jsonl"))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v, want fs.ErrNotExist", err)
	}
}

func TestAppendRejectsInvalidCell(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cells.jsonl")
	w := mustOpenLog(t, path)
	defer w.Close()
	if err := w.Append(Cell{}); err == nil {
		t.Error("Append(Cell{}) succeeded")
	}
	if data, _ := os.ReadFile(path); len(data) != 0 {
		t.Errorf("an invalid cell wrote %q", data)
	}
}
