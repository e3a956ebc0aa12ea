package fuzzing

import "testing"

func TestDeadlineRace(t *testing.T) {
	race := "fuzz: elapsed: 10s, execs: 7917 (2809/sec), new interesting: 13 (total: 65)\n" +
		"--- FAIL: FuzzStore (13.34s)\n    context deadline exceeded\nFAIL\nexit status 1\n" +
		"FAIL\tgithub.com/kvharness/kvharness/harness/kernels/store/fuzz\t13.373s\n"
	for _, c := range []struct {
		name, out string
		want      bool
	}{
		{"the race as go1.26 prints it", race, true},
		{"a crasher", "--- FAIL: FuzzStore (1.20s)\n    fusedstore: property padding violated\n\n    Failing input written to testdata/fuzz/FuzzStore/8f3a\nFAIL\nexit status 1\nFAIL\tx\t1.2s\n", false},
		{"a deadline inside the target, with a crasher", "--- FAIL: FuzzStore (3.00s)\n    context deadline exceeded\n    Failing input written to testdata/fuzz/FuzzStore/77\nFAIL\nexit status 1\nFAIL\tx\t3s\n", false},
		{"a failing seed", "failure while testing seed corpus entry: FuzzStore/seed3\n--- FAIL: FuzzStore (0.10s)\n    context deadline exceeded\nFAIL\nexit status 1\nFAIL\tx\t0.1s\n", false},
		{"a build failure", "# github.com/kvharness/kvharness/harness/kernels/store/fuzz\n./fuzz_test.go:3:2: undefined: x\nFAIL\tx [build failed]\n", false},
		{"a target's own error", "--- FAIL: FuzzStore (0.50s)\n    fuzz FuzzStore: the checker exited: context deadline exceeded\nFAIL\nexit status 1\nFAIL\tx\t0.5s\n", false},
	} {
		if got := DeadlineRace([]byte(c.out)); got != c.want {
			t.Errorf("%s: DeadlineRace = %v, want %v", c.name, got, c.want)
		}
	}
}
