package fuzz

import (
	"bytes"
	"context"
	"testing"

	"github.com/kvharness/kvharness/harness/report"
)

// FuzzStore checks decoded store cases against the plugin named by
// KVHARNESS_PLUGIN. Run it with:
//
//	go test -run='^$' -fuzz='^FuzzStore$' -fuzztime=30s ./fuzz
//
// Everything before f.Fuzz runs once per fuzz worker: each worker has its
// own plugin process and arenas.
func FuzzStore(f *testing.F) {
	env, err := NewEnv()
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(env.Close)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		tg, res, err := env.Check(context.Background(), data)
		if err != nil {
			if res != nil {
				t.Fatalf("case %v: %v", res.Case, err)
			}
			t.Fatal(err)
		}
		if res.Failed() {
			var b bytes.Buffer
			report.WriteResult(&b, tg.Layout, res)
			t.Fatalf("%s %s: property %s violated\n%s", env.Plugin, tg.Layout.Name, res.Primary(), b.String())
		}
	})
}
