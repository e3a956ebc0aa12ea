#!/usr/bin/env bash
# The nightly benchmark job: run the matrix, then compare with the baseline.
# Exit status: 0 no cell slower, 1 a cell slower (confirmed by a rerun), 2 an
# error, such as a cell without the runs or samples to be judged (--strict).
#
#   bench/nightly.sh [OUT]
#
# Environment:
#   KVHARNESS  the kvharness command (default: built from this checkout where Go
#              is installed, else dist/gpu/kvharness from scripts/gpu-build)
#   MATRIX     the matrix (default: bench/matrix-gpu.json on a GPU, else bench/matrix-cpu.json)
#   BASELINE   the file to compare with (default: bench/baselines/<gpu|cpu>.txt)
#   THRESHOLD  the smallest slowdown of a batched cell that counts (default 0.05)
#   STRICT     --strict (the default): a cell that cannot be judged is an error;
#              set it empty to warn instead
#
# A killed night resumes where it stopped: rerun with the same OUT. When the
# comparison finds a slower cell, the matrix runs again into OUT/rerun and a
# cell counts only if the rerun finds it slower too (compare --confirm): one
# cell landing on a slow stretch of a shared machine does not fail a night,
# a change in the code does. OUT/compare.txt is the verdict, OUT/compare.md
# the same as a pull request comment, OUT/overlay/ the two nights plotted per
# layout with the slower cells ringed. To make a night the new baseline, copy
# OUT/bench.txt over the baseline and commit it.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-bench-night-$(date +%Y%m%d)}
strict=${STRICT---strict}
. bench/lib.sh
if [ -z "${KVHARNESS:-}" ]; then
	KVHARNESS=dist/gpu/kvharness
	if command -v go >/dev/null; then
		build_kvharness
	fi
fi
serve_bundled_plugins
kind=cpu
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then kind=gpu; fi
matrix=${MATRIX:-bench/matrix-$kind.json}
baseline=${BASELINE:-bench/baselines/$kind.txt}
# bench_into DIR: one night of the matrix, resumed where a killed one stopped.
bench_into() {
	local resume=
	[ -f "$1/runs.jsonl" ] && resume=--resume
	$KVHARNESS bench --matrix "$matrix" --out "$1" $resume $strict >/dev/null || exit 2 # the table is $1/table.txt
}
mkdir -p "$out"
bench_into "$out"
if [ ! -f "$baseline" ]; then
	echo "nightly: no baseline $baseline; to start one: cp $out/bench.txt $baseline" >&2
	exit 0
fi
# compare_to ARGS...: runs compare, keeps its report in compare.txt and
# compare.md (each whole or not at all) and shows it; returns compare's
# exit status.
compare_to() {
	local rc=0
	$KVHARNESS compare $strict --threshold "${THRESHOLD:-0.05}" --format md "$@" >"$out/compare.md.tmp" 2>/dev/null || true
	$KVHARNESS compare $strict --threshold "${THRESHOLD:-0.05}" --plots "$out/overlay" "$@" >"$out/compare.txt.tmp" || rc=$?
	mv "$out/compare.md.tmp" "$out/compare.md"
	mv "$out/compare.txt.tmp" "$out/compare.txt"
	cat "$out/compare.txt"
	return $rc
}
rc=0
compare_to "$baseline" "$out/bench.txt" || rc=$?
[ $rc -eq 1 ] || exit $rc
echo "nightly: slower cells found; running the matrix again to confirm them" >&2
bench_into "$out/rerun"
# The confirmed report replaces the first: it is the night's verdict.
rc=0
compare_to --confirm "$out/rerun/bench.txt" "$baseline" "$out/bench.txt" || rc=$?
exit $rc
