package results

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

// TestSchemaDocumented: every JSON field of the records kvharness writes
// is named in bench/SCHEMA.md, so that the schema cannot drift from the
// records.
func TestSchemaDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../bench/SCHEMA.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []any{Cell{}, Run{}} {
		for _, name := range jsonFields(reflect.TypeOf(v)) {
			if !strings.Contains(string(doc), "`"+name+"`") {
				t.Errorf("%T field %q is not in bench/SCHEMA.md", v, name)
			}
		}
	}
}

// jsonFields lists the JSON names of t's fields, those of embedded and
// nested structs included.
func jsonFields(t reflect.Type) []string {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || t.PkgPath() == "time" {
		return nil
	}
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name != "" && name != "-" {
			out = append(out, name)
		}
		out = append(out, jsonFields(f.Type)...)
	}
	return out
}
