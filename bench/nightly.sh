#!/usr/bin/env bash
# The nightly benchmark job: run the matrix, then compare with the baseline.
# Exit status: 0 no significant regression, 1 a regression, 2 an error.
#
#   bench/nightly.sh [OUT]
#
# Environment:
#   KVHARNESS  the kvharness command (default: built from this checkout where Go
#              is installed, else dist/gpu/kvharness from scripts/gpu-build)
#   MATRIX     the matrix (default: bench/matrix-gpu.json on a GPU, else bench/matrix-cpu.json)
#   BASELINE   the file to compare with (default: bench/baselines/<gpu|cpu>.txt)
#   THRESHOLD  the smallest slowdown that counts (default 0.05; on a shared CPU,
#              where runs differ by tens of percent, use 0.3)
#
# A killed night resumes where it stopped: rerun with the same OUT. When the
# comparison finds a regression, the matrix runs again into OUT/rerun and a
# regression counts only if the rerun shows it too (compare --confirm): one
# cell landing on a slow stretch of a shared machine does not fail a night,
# a change in the code does. To make a night the new baseline, copy
# OUT/bench.txt over the baseline and commit it.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-bench-night-$(date +%Y%m%d)}
if [ -z "${KVHARNESS:-}" ]; then
	KVHARNESS=dist/gpu/kvharness
	if command -v go >/dev/null; then
		# A built binary, not go run: go run turns every failing exit into 1,
		# and the job must tell a regression (1) from an error (2).
		bin=$(mktemp -d)
		trap 'rm -rf "$bin"' EXIT
		go build -o "$bin/kvharness" ./harness/cmd/kvharness || exit 2
		KVHARNESS=$bin/kvharness
	fi
fi
kind=cpu
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then kind=gpu; fi
matrix=${MATRIX:-bench/matrix-$kind.json}
baseline=${BASELINE:-bench/baselines/$kind.txt}
resume=
[ -f "$out/cells.jsonl" ] && resume=--resume
$KVHARNESS bench --matrix "$matrix" --out "$out" $resume || exit 2
if [ ! -f "$baseline" ]; then
	echo "nightly: no baseline $baseline; to start one: cp $out/bench.txt $baseline" >&2
	exit 0
fi
# compare_to FILE ARGS...: runs compare, keeps its report in FILE (whole or
# not at all) and shows it; returns compare's exit status.
compare_to() {
	local file=$1 rc=0
	shift
	$KVHARNESS compare --threshold "${THRESHOLD:-0.05}" "$@" >"$file.tmp" || rc=$?
	mv "$file.tmp" "$file"
	cat "$file"
	return $rc
}
rc=0
compare_to "$out/compare.txt" "$baseline" "$out/bench.txt" || rc=$?
[ $rc -eq 1 ] || exit $rc
echo "nightly: regressions found; running the matrix again to confirm them" >&2
rerun=--resume
[ -f "$out/rerun/cells.jsonl" ] || rerun=
$KVHARNESS bench --matrix "$matrix" --out "$out/rerun" $rerun || exit 2
# The confirmed report replaces the first: it is the night's verdict.
rc=0
compare_to "$out/compare.txt" --confirm "$out/rerun/bench.txt" "$baseline" "$out/bench.txt" || rc=$?
exit $rc
