package python

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvharness/kvharness/harness/fuzzing/remote"
	"github.com/kvharness/kvharness/harness/junit/junittest"
	"github.com/kvharness/kvharness/harness/kernels"
	"github.com/kvharness/kvharness/harness/kernels/store"
	"github.com/kvharness/kvharness/internal/testtier"
)

// A Python plugin fuzzes as a Go one does: KVHARNESS_PLUGIN names its
// manifest (or its command line), the fuzz environment both lanes open
// starts it, and the store kind's committed corpus finds torchscatter's
// pad-unaware scatter, the crasher naming the plugin by its own name;
// the padding-aware example passes the same inputs.
func TestFuzzPythonPlugin(t *testing.T) {
	quick(t)
	python(t) // not parallel: the fuzz environment reads KVHARNESS_PLUGIN
	k, err := kernels.Lookup(store.Name)
	noErr(t, err)
	seeds, err := remote.ReadCorpus(filepath.Join("..", "..", "harness", "kernels", "store", "testdata", "fuzz", "FuzzStore"))
	noErr(t, err)
	if len(seeds) < 5 {
		t.Fatalf("the store corpus holds %d inputs; want the committed seeds", len(seeds))
	}
	for _, tc := range []struct {
		plugin string
		fails  bool
	}{
		{abs(t, filepath.Join("torchscatter", "kvharness-plugin.json")), true},
		{"python3 " + abs(t, filepath.Join("torchscatter", "plugin.py")), true},
		{abs(t, filepath.Join("indexerstore", "kvharness-plugin.json")), false},
	} {
		t.Run(filepath.Base(filepath.Dir(strings.Fields(tc.plugin)[len(strings.Fields(tc.plugin))-1])), func(t *testing.T) {
			t.Setenv("KVHARNESS_PLUGIN", tc.plugin)
			env, err := k.Fuzz.Checker(context.Background(), nil)
			noErr(t, err)
			defer env.Close()
			failure := ""
			for _, s := range seeds {
				if _, failure = env.Verdict(context.Background(), s); failure != "" {
					break
				}
			}
			switch {
			case tc.fails && !strings.HasPrefix(failure, "torchscatter "):
				t.Errorf("no crasher naming torchscatter from %d seeds; got %q", len(seeds), failure)
			case tc.fails && !strings.Contains(failure, "property padding violated"):
				t.Errorf("crasher %q; want the padding property", failure)
			case !tc.fails && failure != "":
				t.Errorf("the padding-aware store failed a seed: %s", failure)
			}
		})
	}
}

// kvharness fuzz --plugin MANIFEST runs go test -fuzz over a Python
// plugin and exits 1 on its finding, naming the crasher.
func TestFuzzCommandOnManifest(t *testing.T) {
	t.Parallel()
	python(t)
	testtier.FullOnly(t, "builds the kvharness command and the store's fuzz lane, and fuzzes a Python plugin")
	report := filepath.Join(t.TempDir(), "fuzz.xml")
	cmd := exec.Command(kvharnessBinary(t), "fuzz", "--plugin", filepath.Join("torchscatter", "kvharness-plugin.json"), "--time", "20s", "--parallel", "1",
		"--junit", report)
	cmd.Env = append(os.Environ(), "KVHARNESS_FUZZ_CHECKER="+kvharnessBinary(t))
	out, err := cmd.CombinedOutput()
	if code := exitCode(err); code != 1 || !strings.Contains(string(out), "(exit 1: a violation)") {
		t.Errorf("kvharness fuzz on torchscatter's manifest: exit %d (%v), want 1 naming the crasher\n%s", code, err, out)
	}
	junittest.Validate(t, report)
	if got := junittest.Counts(t, report); len(got) != 1 || got[0] != "kvharness fuzz torchscatter: failure" {
		t.Errorf("the JUnit report reads %q; want FuzzStore failed, under torchscatter's own name", got)
	}
}
