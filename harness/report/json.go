package report

import (
	"bytes"
	"encoding/json"
	"io"
	"reflect"

	"github.com/kvharness/kvharness/harness/oracle"
)

// Field is one member of a JSON object.
type Field struct {
	Key   string
	Value any
	// OmitEmpty leaves the member out when Value is its type's zero value
	// (as encoding/json's omitempty does).
	OmitEmpty bool
}

// Object is a JSON object whose members keep their order: reports are
// compared byte for byte.
type Object []Field

// MarshalJSON implements json.Marshaler.
func (o Object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	n := 0
	for _, f := range o {
		if f.OmitEmpty && empty(f.Value) {
			continue
		}
		if n > 0 {
			b.WriteByte(',')
		}
		n++
		k, _ := json.Marshal(f.Key)
		b.Write(k)
		b.WriteByte(':')
		v, err := json.Marshal(f.Value)
		if err != nil {
			return nil, err
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// empty is encoding/json's omitempty test: false, 0, a nil pointer or
// interface, and an empty string, slice or map.
func empty(v any) bool {
	if v == nil {
		return true
	}
	r := reflect.ValueOf(v)
	switch r.Kind() {
	case reflect.String, reflect.Slice, reflect.Map, reflect.Array:
		return r.Len() == 0
	case reflect.Pointer, reflect.Interface:
		return r.IsNil()
	}
	return r.IsZero()
}

// JSONSchema names the version of check's JSON report, its first member:
// a dashboard that reads the report can refuse a version it does not
// know. bench/SCHEMA.md documents it.
const JSONSchema = "kvharness.check/v1"

// JSON is the machine-readable form of a run.
func JSON(r *Run) Object {
	h := r.Header
	out := Object{{Key: "schema", Value: JSONSchema}, {Key: "plugin", Value: h.Plugin}, {Key: "version", Value: h.Version},
		{Key: "variant", Value: h.Variant, OmitEmpty: true}, {Key: "seed", Value: h.Seed},
		{Key: "shard", Value: h.Shard, OmitEmpty: true}}
	out = append(out, h.JSON...)
	var verdicts []Object
	for _, row := range r.Rows {
		verdicts = append(verdicts, r.verdictJSON(row))
	}
	fault := ""
	if r.Err != nil {
		fault = r.Err.Error()
	}
	return append(out, Field{Key: "verdicts", Value: verdicts}, Field{Key: "passed", Value: r.Passed()},
		Field{Key: "fault", Value: fault, OmitEmpty: true})
}

func (r *Run) verdictJSON(row Row) Object {
	var v Object
	if r.layout {
		v = append(v, Field{Key: "layout", Value: row.Layout.Name})
	}
	if r.Header.Shapes && row.Layout != nil {
		v = append(v, Field{Key: "head_dim", Value: row.Layout.HeadDim}, Field{Key: "page_size", Value: row.Layout.PageSize})
	}
	props := map[oracle.Kind]string{}
	for i, p := range r.cols {
		props[p] = row.Cells[i]
	}
	v = append(v, Field{Key: r.label, Value: row.Label}, Field{Key: "seed", Value: row.Seed},
		Field{Key: "cases", Value: row.Cases}, Field{Key: "properties", Value: props})
	if f := row.Failure; f != nil {
		jf := Object{{Key: "property", Value: f.Property}, {Key: "flaky", Value: f.Flaky, OmitEmpty: true},
			{Key: "needs_history", Value: f.NeedsHistory, OmitEmpty: true}, {Key: "shrinks", Value: f.Shrinks},
			{Key: "shrink_cut", Value: f.ShrinkCut, OmitEmpty: true}}
		if f.Race {
			jf = append(jf, Field{Key: "race", Value: Object{{Key: "writers", Value: f.RaceNote}, {Key: "runs", Value: f.RaceRuns},
				{Key: "hits", Value: f.RaceHits}, {Key: "of_case_found", Value: f.RaceShrunk}}})
		}
		jf = append(jf, f.json...)
		jf = append(jf, Field{Key: "repro", Value: f.ReproPath, OmitEmpty: true}, Field{Key: "replay", Value: f.Replay(), OmitEmpty: true})
		if f.ReproErr != nil {
			jf = append(jf, Field{Key: "repro_error", Value: f.ReproErr.Error()})
		}
		v = append(v, Field{Key: "failure", Value: jf})
	}
	return v
}

// WriteJSON prints the run as indented JSON.
func WriteJSON(w io.Writer, r *Run) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(JSON(r))
}
