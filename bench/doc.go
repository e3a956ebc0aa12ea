// Package bench holds kvharness's benchmarks: go test -bench benchmarks of
// the bundled kernels through the same machinery as kvharness bench (and
// under the same names, so that compare matches them), the nightly
// matrices, the scripts that run a night and compare it with a baseline
// (nightly.sh) and measure the gate's false-alarm and detection rates
// (nights.sh; gpu-nights.sh on the H200), the baselines, and the checks of
// the example CI files (.github/workflows, deploy/k8s).
//
//	go test -run='^$' -bench=. -count=6 ./bench > new.txt   # CPU by default
//	./bench/nightly.sh                                      # matrix + compare
//	./bench/nights.sh OUT                                   # rates on this machine
//
// SCHEMA.md documents every record a night writes.
package bench
