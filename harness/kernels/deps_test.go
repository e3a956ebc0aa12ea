package kernels

import (
	"bufio"
	"bytes"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/kvharness/kvharness/"

// imports is the module's import graph, as go list reads it: each package
// of the module and the packages it imports (tests left out).
func imports(t *testing.T) map[string][]string {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", module+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	g := map[string][]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) > 0 {
			g[strings.TrimPrefix(f[0], module)] = trimAll(f[1:])
		}
	}
	if len(g) < 20 {
		t.Fatalf("go list listed %d packages; want the module's", len(g))
	}
	return g
}

func trimAll(paths []string) []string {
	var out []string
	for _, p := range paths {
		if strings.HasPrefix(p, module) {
			out = append(out, strings.TrimPrefix(p, module))
		}
	}
	return out
}

// reach is every module package p depends on, not walking through the
// packages stop names (they are reached, not entered).
func reach(g map[string][]string, p string, stop func(string) bool) []string {
	seen := map[string]bool{}
	var walk func(string)
	walk = func(q string) {
		for _, d := range g[q] {
			if !seen[d] {
				seen[d] = true
				if !stop(d) {
					walk(d)
				}
			}
		}
	}
	walk(p)
	var out []string
	for d := range seen {
		out = append(out, d)
	}
	sort.Strings(out)
	return out
}

// kindOf is the kind a package belongs to: harness/kernels/<kind>/... and
// harness/sdk/<kind>/...; "" for any other.
func kindOf(p string) string {
	for _, root := range []string{"harness/kernels/", "harness/sdk/"} {
		if rest, ok := strings.CutPrefix(p, root); ok {
			k, _, _ := strings.Cut(rest, "/")
			return k
		}
	}
	return ""
}

const kvpb = "harness/protocol/kvpb"

// wire are the packages where the harness meets the wire: the plugin
// client, the attach builder and the proto conversions. kvpb may be
// reached through them, never around them.
var wire = []string{"harness/plugin", "harness/target", "harness/protocol/wire", kvpb}

// TestImportBoundaries holds the tree to its architecture: domain packages
// speak Go types (kvpb only behind the wire packages), no kind depends on
// another, and the shared kit depends on no kind.
func TestImportBoundaries(t *testing.T) {
	g := imports(t)
	t.Run("domain packages speak Go types", func(t *testing.T) {
		for _, p := range []string{"harness/arena", "harness/arena/shm", "harness/kind", "harness/mutants", "harness/pd",
			"harness/oracle", "harness/layout", "harness/report"} {
			if _, ok := g[p]; !ok {
				t.Fatalf("no package %s in the module", p)
			}
			if slices.Contains(g[p], kvpb) {
				t.Errorf("%s imports %s: convert at the wire (plugin client, SDK), not in a domain package", p, kvpb)
			}
			if d := reach(g, p, func(q string) bool { return slices.Contains(wire, q) }); slices.Contains(d, kvpb) {
				t.Errorf("%s reaches %s other than through %v: %v", p, kvpb, wire[:3], d)
			}
		}
	})
	kinds := map[string]bool{}
	for p := range g {
		if k := kindOf(p); k != "" && strings.Count(p, "/") >= 2 {
			kinds[k] = true
		}
	}
	for _, want := range []string{"store", "read", "transfer", "load", "pdasync"} {
		if !kinds[want] {
			t.Fatalf("kinds found %v: no %s", kinds, want)
		}
	}
	t.Run("no kind imports another", func(t *testing.T) {
		for p := range g {
			k := kindOf(p)
			if k == "" {
				continue
			}
			for _, d := range reach(g, p, func(string) bool { return false }) {
				if j := kindOf(d); j != "" && j != k {
					t.Errorf("%s (kind %s) depends on %s (kind %s)", p, k, d, j)
				}
			}
		}
	})
	t.Run("no kit package imports a kind", func(t *testing.T) {
		for p := range g {
			if !strings.HasPrefix(p, "harness/") || kindOf(p) != "" || strings.HasPrefix(p, "harness/cmd/") ||
				p == "harness/kernels" || strings.HasPrefix(p, "harness/internal/kindtest") {
				continue // the registry, the commands and the kinds' test kit name kinds
			}
			for _, d := range reach(g, p, func(string) bool { return false }) {
				if kindOf(d) != "" {
					t.Errorf("kit package %s depends on kind package %s", p, d)
				}
			}
		}
	})
}
