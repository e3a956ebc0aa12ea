package remote

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvharness/kvharness/harness/fuzzing"
	"github.com/kvharness/kvharness/harness/kernels/store"
	"github.com/kvharness/kvharness/harness/protocol/doorbell"
	"github.com/kvharness/kvharness/harness/workload"
	"github.com/kvharness/kvharness/plugins"
)

const storeCorpus = "../../kernels/store/testdata/fuzz/FuzzStore"

// start starts a FuzzStore checker on the plugin and variant named,
// closed with the test.
func start(t *testing.T, plugin, variant string) *Checker {
	t.Helper()
	t.Setenv("KVHARNESS_PLUGIN", plugin)
	t.Setenv("KVHARNESS_VARIANT", variant)
	c, err := Start("FuzzStore")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// inBinary is the in-binary lane's checker of FuzzStore, on the same
// plugin and variant: what the lane's answers must equal.
func inBinary(t *testing.T) *fuzzing.Env[*store.Target, *store.Case, *store.Result] {
	t.Helper()
	env, err := fuzzing.NewEnv(context.Background(), store.FuzzTarget, plugins.Servers)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(env.Close)
	return env
}

// seeds is the store kind's committed corpus, a long input and a long
// case: what the lane must answer as the in-binary lane does.
func seeds(t *testing.T) map[string][]byte {
	t.Helper()
	in, err := ReadCorpus(storeCorpus)
	if err != nil || len(in) < 10 {
		t.Fatalf("the store corpus: %d inputs, %v", len(in), err)
	}
	out := map[string][]byte{}
	for i, s := range in {
		out[filepath.Base(storeCorpus)+"#"+string(rune('a'+i))] = s
	}
	long := make([]byte, doorbell.MaxRequest+100) // past the doorbell: through a file
	for i := range long {
		long[i] = byte(i * 7)
	}
	out["past the doorbell"] = long
	// 63 padded rows on stale slots: a pad-unaware store's report of
	// them is longer than the doorbell's message.
	c := &store.Case{Padding: store.PadCount, Valid: 1, Loc: make([]int64, 64), Rows: make([]workload.Row, 64)}
	for i := range c.Loc {
		c.Loc[i] = int64(3 * i)
		c.Rows[i] = workload.Row{Kind: workload.RowNormal, Seed: uint64(i)}
	}
	out["63 stale padded rows"] = append([]byte{0}, store.Encode(c, 64)...)
	return out
}

// TestLaneAnswersAsInBinary: on a correct plugin and on a mutant, every
// seed gets from the checker process the features and the crasher's
// message, byte for byte, that the in-binary lane gives it; messages
// longer than the doorbell (a failure of 64 rows) and inputs longer than
// it come whole.
func TestLaneAnswersAsInBinary(t *testing.T) {
	for _, variant := range []string{"", "ignore-count"} {
		t.Run("variant="+variant, func(t *testing.T) {
			c := start(t, "fusedstore", variant)
			env := inBinary(t)
			failures, long := 0, false
			for name, in := range seeds(t) {
				features, failure, err := c.Check(in)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				wantNames, wantFailure := env.Verdict(context.Background(), in)
				if failure != wantFailure {
					t.Errorf("%s: the lane's message differs:\n%s\nwant:\n%s", name, failure, wantFailure)
				}
				if want := featureIDs(wantNames, maxFeatures); string(features) != string(want) {
					t.Errorf("%s: features %x, want %x (%q)", name, features, want, wantNames)
				}
				if failure != "" {
					failures++
					long = long || len(failure) > doorbell.MaxMessage
				}
			}
			if mutant := variant != ""; (failures > 0) != mutant {
				t.Errorf("%d seeds failed; a mutant must fail some, a correct plugin none", failures)
			}
			if variant != "" && !long {
				t.Errorf("no failure was longer than the doorbell's %d bytes: the file path went untested", doorbell.MaxMessage)
			}
		})
	}
}

// TestCheckerDeathIsReported: a checker that dies under an input is an
// error naming it (not a verdict), and the next input starts another.
func TestCheckerDeathIsReported(t *testing.T) {
	c := start(t, "fusedstore", "")
	c.cmd.Process.Kill()
	_, _, err := c.Check([]byte{1, 2, 3})
	if err == nil || !strings.Contains(err.Error(), "the checker") || !strings.Contains(err.Error(), "exited") {
		t.Fatalf("after the checker was killed: %v; want an error saying it exited", err)
	}
	if _, failure, err := c.Check([]byte{1, 2, 3}); err != nil || failure != "" {
		t.Fatalf("the next input: failure %q, error %v; want a pass on a fresh checker", failure, err)
	}
}

// TestStartErrors: a plugin without the kind skips the target; a plugin
// that is not there, or a checker that is not, fails it with a message
// naming it.
func TestStartErrors(t *testing.T) {
	t.Setenv("KVHARNESS_PLUGIN", "pdtransfer")
	_, err := Start("FuzzStore")
	if _, ok := err.(*SkipError); !ok {
		t.Errorf("FuzzStore on pdtransfer: %v; want a skip", err)
	}
	t.Setenv("KVHARNESS_PLUGIN", "/nonexistent/mystore")
	if _, err := Start("FuzzStore"); err == nil || !strings.Contains(err.Error(), "/nonexistent/mystore") {
		t.Errorf("a missing plugin: %v; want an error naming it", err)
	}
	t.Setenv(CheckerEnv, "/nonexistent/kvharness")
	if _, err := Start("FuzzStore"); err == nil || !strings.Contains(err.Error(), CheckerEnv+"=/nonexistent/kvharness") {
		t.Errorf("a missing checker: %v; want an error naming %s", err, CheckerEnv)
	}
}

// TestReadCorpus reads go test's corpus files and refuses anything else
// with the file's name.
func TestReadCorpus(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a", "go test fuzz v1\n[]byte(\"\\x00ab\")\n")
	got, err := ReadCorpus(dir)
	if err != nil || len(got) != 1 || string(got[0]) != "\x00ab" {
		t.Fatalf("ReadCorpus = %q, %v", got, err)
	}
	for name, body := range map[string]string{"b": "go test fuzz v1\nint(3)\n", "c": "fuzz v2\n[]byte(\"\")\n", "d": "go test fuzz v1\n[]byte(\"x)\n"} {
		os.RemoveAll(dir)
		os.Mkdir(dir, 0o755)
		write(name, body)
		if _, err := ReadCorpus(dir); err == nil || !strings.Contains(err.Error(), filepath.Join(dir, name)) {
			t.Errorf("%q: %v; want an error naming the file", body, err)
		}
	}
	if got, err := ReadCorpus(filepath.Join(dir, "none")); err != nil || got != nil {
		t.Errorf("a missing folder: %q, %v; want an empty corpus", got, err)
	}
}

// TestCoverCountsEachBucket: a feature runs its bucket's block, and only
// it.
func TestCoverCountsEachBucket(t *testing.T) {
	before := hits
	cover(buckets + 5)
	cover(7)
	cover(7)
	for i := range hits {
		want := before[i]
		switch i {
		case 5:
			want++
		case 7:
			want += 2
		}
		if hits[i] != want {
			t.Errorf("bucket %d: %d hits, want %d", i, hits[i], want)
		}
	}
}
