package report

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLongReproNamesAreBounded: a repro file named after a long variant
// and layout keeps its name within a file name's 255 bytes (the temporary
// name too) and saves; two long names that differ only at their end still
// differ; a short name is left as it is.
func TestLongReproNamesAreBounded(t *testing.T) {
	dir := t.TempDir()
	repro := func(variant string) *Repro {
		return &Repro{Version: ReproVersion, Kernel: "store", Plugin: "faulty", Variant: variant, Tag: "none",
			Layout: json.RawMessage(`{"name":"` + strings.Repeat("L", 200) + `"}`)}
	}
	long := strings.Repeat("v", 300)
	a, b := repro(long+"a"), repro(long+"b")
	if a.Name() == b.Name() {
		t.Errorf("two long names that differ at their end are one name: %s", a.Name())
	}
	for _, r := range []*Repro{a, b} {
		if n := len(r.Name()); n > maxNameBytes+len(".json") {
			t.Errorf("name of %d bytes: %s", n, r.Name())
		}
		path, err := r.Save(dir)
		if err != nil {
			t.Fatalf("save: %v", err)
		}
		if _, err := os.Stat(path); err != nil {
			t.Errorf("saved %s: %v", path, err)
		}
	}
	short := repro("vv")
	short.Layout = json.RawMessage(`{"name":"bf16"}`)
	if n := short.Name(); !strings.HasPrefix(n, "faulty-vv-bf16-none-") || strings.Contains(n, "~") {
		t.Errorf("a short name changed: %s", n)
	}
}

// TestUnsavedReproStillPrinted: a failure whose repro file could not be
// written is printed whole, with why where its replay line would be, and
// its JSON says so; a saved one prints its replay line.
func TestUnsavedReproStillPrinted(t *testing.T) {
	why := &os.PathError{Op: "open", Path: filepath.Join("/results", "x.json"), Err: errors.New("no space left on device")}
	for _, tc := range []struct {
		f    Failure
		want string
	}{
		{Failure{Property: "padding", ReproErr: why}, "  replay: no repro file (not saved: open /results/x.json: no space left on device)"},
		{Failure{Property: "padding", ReproPath: "/results/x.json"}, "  replay: kvharness repro /results/x.json"},
	} {
		tc.f.write = func(w io.Writer) { io.WriteString(w, "  the case and its bytes\n") }
		var b strings.Builder
		WriteFailure(&b, &tc.f)
		if !strings.Contains(b.String(), tc.want+"\n") || !strings.Contains(b.String(), "the case and its bytes") {
			t.Errorf("got\n%s\nwant the case and the line\n%s", b.String(), tc.want)
		}
	}
}
