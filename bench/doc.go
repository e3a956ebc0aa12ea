// Package bench holds kvharness's benchmarks: go test -bench benchmarks of
// the bundled kernels through the same machinery as kvharness bench, the
// nightly matrices, the script that runs a night and compares it with a
// baseline, and the baselines themselves.
//
//	go test -run='^$' -bench=. -count=10 ./bench > new.txt   # CPU by default
//	./bench/nightly.sh                                       # matrix + compare
package bench
