package fuzzing

import "regexp"

// deadlineRace is go test's whole report of a fuzz target that failed
// only because its -fuzztime ran out: Go 1.26's fuzz coordinator can let
// the deadline that ends fuzzing escape as the target's error when a
// worker is busy at that instant (golang/go#75804, fixed in Go 1.27).
var deadlineRace = regexp.MustCompile(`(?m)^--- FAIL: Fuzz\w+ \([0-9.]+s\)\n\s+context deadline exceeded\n(FAIL\n)?(exit status 1\n)?FAIL\s`)

// DeadlineRace says whether out, the output of a failed go test -fuzz
// -fuzztime=D, is that race and nothing else: no input failed, none was
// written, and fuzzing ran its time. Such a run found nothing.
func DeadlineRace(out []byte) bool {
	return deadlineRace.Match(out) && !failingInput.Match(out)
}

// failingInput is any sign that an input failed: a crasher written, or a
// seed of the corpus that failed.
var failingInput = regexp.MustCompile(`Failing input written to |failure while testing seed corpus entry|panic: |property \w[\w ()]* violated`)
