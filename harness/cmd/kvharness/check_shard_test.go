package main

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// checkReport is check --json's report, its verdicts kept whole.
type checkReport struct {
	Schema   string            `json:"schema"`
	Shard    string            `json:"shard"`
	Passed   bool              `json:"passed"`
	Verdicts []json.RawMessage `json:"verdicts"`
}

// TestCheckShardsUnionToWhole: three machines each running check
// --shard i/3 check between them exactly the rows of the unsharded run,
// each row with the same seed, cases and verdict (a failing kernel's
// failures and repro files included), and none twice; a shard that owns
// no row is an error, not an empty pass.
func TestCheckShardsUnionToWhole(t *testing.T) {
	long(t)
	for _, tc := range []struct {
		plugin string
		code   int
	}{{"fusedstore", exitPass}, {"bf16scatter", exitViolation}} {
		t.Run(tc.plugin, func(t *testing.T) {
			results := resultsDir(t)
			args := []string{"check", "--plugin", tc.plugin, "--cases", "20", "--backend", "cpu", "--json", "--results", results}
			whole := checkJSON(t, tc.code, args...)
			if whole.Schema != "kvharness.check/v1" || whole.Shard != "" {
				t.Errorf("whole run: schema %q, shard %q", whole.Schema, whole.Shard)
			}
			if len(whole.Verdicts) < 4 {
				t.Fatalf("whole run has %d rows; the test wants more than its 3 shards", len(whole.Verdicts))
			}
			var union []json.RawMessage
			failed := false
			for i := 1; i <= 3; i++ {
				part := checkJSON(t, -1, append(args, "--shard", fmt.Sprintf("%d/3", i))...)
				if part.Shard != fmt.Sprintf("%d/3", i) || len(part.Verdicts) == 0 {
					t.Errorf("shard %d/3: shard %q, %d rows", i, part.Shard, len(part.Verdicts))
				}
				failed = failed || !part.Passed
				union = append(union, part.Verdicts...)
			}
			if failed == whole.Passed {
				t.Errorf("the shards failed: %v; the whole run passed: %v", failed, whole.Passed)
			}
			if got, want := rowSet(t, union), rowSet(t, whole.Verdicts); !reflect.DeepEqual(got, want) || len(union) != len(whole.Verdicts) {
				t.Errorf("the shards' %d rows are not the whole run's %d:\n%v\nwant\n%v", len(union), len(whole.Verdicts), got, want)
			}
		})
	}
	code, _, stderr := runCLI(t, "check", "--plugin", "fusedstore", "--layout", "bf16", "--padding", "sink", "--cases", "5",
		"--backend", "cpu", "--results", resultsDir(t), "--shard", "2/2")
	if code != exitError || !strings.Contains(stderr, "--shard 2/2 owns no row") {
		t.Errorf("a shard of no rows: exit %d\n%s", code, stderr)
	}
}

// checkJSON runs check --json and decodes its report; want -1 takes any
// verdict's exit status (0 or 1).
func checkJSON(t *testing.T, want int, args ...string) checkReport {
	t.Helper()
	code, stdout, stderr := runCLI(t, args...)
	if (want >= 0 && code != want) || (want < 0 && code != exitPass && code != exitViolation) {
		t.Fatalf("%v: exit %d\n%s", args, code, stderr)
	}
	var r checkReport
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("%v: %v\n%s", args, err, stdout)
	}
	return r
}

// rowSet is the rows by layout and label, each its verdict's JSON.
func rowSet(t *testing.T, verdicts []json.RawMessage) map[string]string {
	t.Helper()
	set := map[string]string{}
	for _, v := range verdicts {
		var key struct{ Layout, Padding string }
		if err := json.Unmarshal(v, &key); err != nil {
			t.Fatal(err)
		}
		set[key.Layout+"/"+key.Padding] = string(v)
	}
	return set
}
