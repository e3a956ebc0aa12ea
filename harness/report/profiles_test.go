package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/kvharness/kvharness/harness/oracle"
)

// located is a kind's violation: bytes at Off when Len > 0.
type located struct {
	line string
	g    oracle.Violation
}

func (v located) String() string            { return v.line }
func (v located) Generic() oracle.Violation { return v.g }

func TestWriteLocatedDiffsOnlyLocatedBytes(t *testing.T) {
	var b bytes.Buffer
	WriteLocated(&b, []located{
		{line: "descriptor: wrong item_len", g: oracle.Violation{Want: []byte{1}, Got: []byte{2}}}, // Len 0: no bytes located
		{line: "page 3: wrong bytes", g: oracle.Violation{Off: 32, Len: 2, Want: []byte{0xaa, 0xbb}, Got: []byte{0xaa, 0xcc}}},
	})
	out := b.String()
	for _, want := range []string{"2 violations:", "descriptor: wrong item_len", "page 3: wrong bytes", "- want @32", "+ got  @32"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Count(out, "- want") != 1 {
		t.Errorf("want one hex diff, for the located violation alone:\n%s", out)
	}
}

func TestProfileTitleAndHeadline(t *testing.T) {
	h := Header{Plugin: "p", Version: "1.0", Backend: "cpu", Cases: 20, Seed: 7, About: "2 layers"}
	want := "plugin p 1.0, variant none, on cpu: loads, up to 20 cases per row, seed 7, 2 layers"
	if got := ProfileTitle("loads")(h); got != want {
		t.Errorf("title %q, want %q", got, want)
	}
	if got := ProfileHeadline("load")(nil, "fail"); strings.Join(got, "|") != "load|profile fail" {
		t.Errorf("headline %q", got)
	}
}
