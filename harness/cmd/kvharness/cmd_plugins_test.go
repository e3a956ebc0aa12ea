package main

import (
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/kvharness/kvharness/harness/internal/kindtest"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
	"github.com/kvharness/kvharness/harness/protocol/wire"
)

// TestRecipeLine: kvharness plugins shows the recipe a layout is judged
// by: the declared one, else the layout's default, and says where a
// declaration does not fit the layout.
func TestRecipeLine(t *testing.T) {
	dsv4 := kindtest.Layout(t, "dsv4-main", 0, 64)
	bf16 := kindtest.Layout(t, "bf16", 128, 64)
	sglang := wire.RecipeToProto(&layout.Recipe{Eps: new(1e-8), Quantize: layout.Reciprocal})
	f32 := wire.RecipeToProto(&layout.Recipe{Scale: layout.ScaleF32})
	for _, tc := range []struct {
		name string
		g    *kvpb.Recipe
		l    *layout.Layout
		want string
	}{
		{"default", nil, dsv4, "(the layout's default): scale ue8m0, eps 1e-4, x/s"},
		{"declared", sglang, dsv4, "(declared): scale ue8m0, eps 1e-8, x*(1/s)"},
		{"misfit", f32, dsv4, "≠ layout: invalid layout \"dsv4-main\": field \"nope\": recipe scale \"f32\""},
		{"bf16", nil, bf16, ""},
		{"bf16 declared", sglang, bf16, "≠ layout: it has no fp8 fields"},
		{"unknown layout", sglang, nil, "(declared): scale from the scale field, eps 1e-8"},
		{"unknown, silent", nil, nil, ""},
		{"unreadable", &kvpb.Recipe{Rounding: 3}, dsv4, "(declared, unreadable): recipe rounding"},
	} {
		r, err := wire.RecipeFromProto(tc.g)
		got := recipeLine(plugin.Geometry{Recipe: r, RecipeErr: err}, tc.l)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want one containing %q", tc.name, got, tc.want)
		}
	}
}

// TestPluginsKernelFilter: --kernel lists only the plugins that serve the
// kernel; a kernel no kind has is refused in one line.
func TestPluginsKernelFilter(t *testing.T) {
	code, out, errOut := runCLI(t, "plugins", "--plugin", "fusedstore", "--plugin", "pdtransfer", "--kernel", "transfer")
	if code != exitPass || !strings.HasPrefix(out, "pdtransfer ") || strings.Contains(out, "fusedstore") {
		t.Errorf("plugins --kernel transfer: exit %d, stdout %q, stderr %q; want pdtransfer alone", code, out, errOut)
	}
	code, out, errOut = runCLI(t, "plugins", "--kernel", "stroe")
	if code != exitError || out != "" || !strings.Contains(errOut, `--kernel "stroe": want one of`) || strings.Count(errOut, "\n") != 1 {
		t.Errorf("plugins --kernel stroe: exit %d, stdout %q, stderr %q; want one line naming the flag", code, out, errOut)
	}
}

// TestPluginTypo: a plugin name close to a bundled plugin's gets it as a
// suggestion; a Python example's name gets its manifest, the way to
// name it.
func TestPluginTypo(t *testing.T) {
	for arg, want := range map[string]string{
		"fusedstor":    "did you mean fusedstore?",
		"torchscatter": "--plugin " + filepath.Join("..", "..", "..", "plugins", "python", "torchscatter", "kvharness-plugin.json"),
	} {
		code, out, errOut := runCLI(t, "check", "--plugin", arg)
		if code != exitError || out != "" || !strings.Contains(errOut, want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("check --plugin %s: exit %d, stdout %q, stderr %q; want one line with %q", arg, code, out, errOut, want)
		}
	}
}

// TestPluginsJSONLayoutModels: plugins --json at a head count prints, for
// each engine cache the plugin declares there, the layout it stands for
// in the layout file form, at that count; the caches of one head are
// declared (and printed) at one head.
func TestPluginsJSONLayoutModels(t *testing.T) {
	for _, heads := range []int{1, 4} {
		code, stdout, stderr := runCLI(t, "plugins", "--plugin", "fusedstore", "--json", "--heads", strconv.Itoa(heads))
		if code != exitPass {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		var out []struct {
			LayoutModels []struct {
				Name  string `json:"name"`
				Heads int    `json:"heads"`
			} `json:"layout_models"`
		}
		if err := json.Unmarshal([]byte(stdout), &out); err != nil || len(out) != 1 {
			t.Fatalf("%v: %s", err, stdout)
		}
		got := map[string]int{}
		for _, m := range out[0].LayoutModels {
			got[m.Name] = m.Heads
		}
		for _, n := range layout.ModelNames() {
			h, listed := got[n]
			switch {
			case layout.OneHead(n) && heads > 1:
				if listed {
					t.Errorf("heads %d: %s (one head a token) listed", heads, n)
				}
			case layout.OneHead(n) || heads == 1:
				if !listed || h != 0 {
					t.Errorf("heads %d: %s: heads %d (listed %v); want none said", heads, n, h, listed)
				}
			case !listed || h != heads:
				t.Errorf("heads %d: %s: heads %d (listed %v)", heads, n, h, listed)
			}
		}
	}
}
