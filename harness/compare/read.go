package compare

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"

	"golang.org/x/perf/benchfmt"
	"golang.org/x/perf/benchproc"

	"github.com/kvharness/kvharness/harness/results"
)

// A rowKey identifies a row: a benchmark and one of its units (tidied,
// as benchfmt returns it: sec/op, p99-sec/op, GB/s).
type rowKey struct{ name, unit string }

// A table is one benchmark file grouped by row.
type table struct {
	name   string
	order  []rowKey // first appearance
	names  map[string]bool
	values map[rowKey][]float64
	config map[string]string // file config keys with one value in the file ("" if it varied)
	ignore []string          // name keys dropped before matching
	filter *benchproc.Filter // nil: every result
	units  benchfmt.UnitMetadataMap
	kv     bool // written by kvharness bench (it has a plugin-version config)
}

// readTable reads a whole Go benchmark file. A syntax error, or a file
// that ends mid-line (truncated), is a *benchfmt.SyntaxError with the
// file and line.
func readTable(r io.Reader, name string, ignore []string, filter *benchproc.Filter) (*table, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("%s: more than %d bytes, more than a benchmark file holds; give the right file", name, MaxFileBytes)
	}
	if bytes.IndexByte(data, 0) >= 0 {
		return nil, fmt.Errorf("%s holds NUL bytes: it is not a benchmark file (a text file of Benchmark lines); give the right file", name)
	}
	if err := checkComplete(data, name); err != nil {
		return nil, err
	}
	t := &table{name: name, names: map[string]bool{}, values: map[rowKey][]float64{}, config: map[string]string{}, ignore: ignore, filter: filter}
	br := benchfmt.NewReader(bytes.NewReader(data), name)
	for br.Scan() {
		if err := t.add(br.Result()); err != nil {
			return nil, fmt.Errorf("%w (is this a Go benchmark file? regenerate it with kvharness bench)", err)
		}
	}
	if err := br.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	if len(t.order) == 0 {
		if filter != nil {
			return nil, fmt.Errorf("%s: %w (none matches the filter)", name, ErrNoResults)
		}
		return nil, fmt.Errorf("%s: %w", name, ErrNoResults)
	}
	t.units = br.Units()
	if t.kv && t.config[results.LinesKey] != results.LinesRuns {
		return nil, fmt.Errorf("%s: %w", name, ErrChunked)
	}
	return t, nil
}

// newFilter compiles a benchproc filter; "" is every result.
func newFilter(query string) (*benchproc.Filter, error) {
	if query == "" {
		return nil, nil
	}
	f, err := benchproc.NewFilter(query)
	if err != nil {
		return nil, fmt.Errorf("--filter %q: %w (the syntax is benchstat's: /plugin:fusedstore /tokens:4096 .name:Store, with -x, OR and parentheses)", query, err)
	}
	return f, nil
}

// checkComplete rejects a file whose last line has no newline: every
// writer of the format ends lines, so it was cut short.
func checkComplete(data []byte, name string) error {
	if len(data) == 0 || data[len(data)-1] == '\n' {
		return nil
	}
	line := bytes.Count(data, []byte{'\n'}) + 1
	return &benchfmt.SyntaxError{FileName: name, Line: line,
		Msg: "file ends mid-line; it looks truncated (was the run killed while writing? rerun or restore it)"}
}

func (t *table) add(rec benchfmt.Record) error {
	switch rec := rec.(type) {
	case *benchfmt.SyntaxError:
		return rec
	case *benchfmt.Result:
		if t.filter != nil {
			ok, err := t.filter.Apply(rec)
			if err != nil || !ok {
				return nil
			}
		}
		t.addResult(rec)
	}
	return nil
}

func (t *table) addResult(res *benchfmt.Result) {
	name := dropKeys(withoutProcs(res.Name), t.ignore)
	t.names[name] = true
	if res.GetConfig("plugin-version") != "" {
		t.kv = true
	}
	for _, v := range res.Values {
		k := rowKey{name, v.Unit}
		if _, ok := t.values[k]; !ok {
			t.order = append(t.order, k)
		}
		t.values[k] = append(t.values[k], v.Value)
	}
	for _, c := range res.Config {
		if !c.File {
			continue
		}
		if have, ok := t.config[c.Key]; ok && have != string(c.Value) {
			t.config[c.Key] = "" // varies within the file
		} else if !ok {
			t.config[c.Key] = string(c.Value)
		}
	}
}

// withoutProcs is a benchmark name without its -N GOMAXPROCS suffix, so
// that go test -bench's BenchmarkStore/...-2 and kvharness bench's
// BenchmarkStore/... name one cell.
func withoutProcs(n benchfmt.Name) string {
	base, parts := n.Parts()
	var b strings.Builder
	b.Write(base)
	for _, p := range parts {
		if len(p) > 0 && p[0] != '-' {
			b.Write(p)
		}
	}
	return b.String()
}

// dropKeys removes "/key=value" parts of a benchmark name for each key.
func dropKeys(name string, keys []string) string {
	if len(keys) == 0 {
		return name
	}
	parts := strings.Split(name, "/")
	out := parts[:1]
	for _, p := range parts[1:] {
		k, _, _ := strings.Cut(p, "=")
		if !slices.Contains(keys, k) {
			out = append(out, p)
		}
	}
	return strings.Join(out, "/")
}
