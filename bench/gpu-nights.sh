#!/usr/bin/env bash
# The GPU half of the nightly gate's measurements, for the H200 machine:
# binaries from ./scripts/gpu-build (no Go toolchain there). It runs
#
#  1. one night of the full GPU matrix (bench/matrix-gpu.json) into
#     $OUT/night: its table as markdown (night.md, a pull request
#     comment), its plots (night/plots/: latency CDFs and throughput per
#     plugin and layout), and its bench.txt, the candidate for
#     bench/baselines/gpu.txt in the format of runs;
#  2. bench/nights.sh over bench/matrix-gpu-nights.json (fusedstore, bf16
#     and fp8-paged, 1 to 262,144 tokens, eager and graph, per launch and
#     batched, 6 passes): a base night, 10 identical nights and 10 nights
#     of each of the slowed (2x work) and slowed10 (10% more work)
#     variants, each compared with the base and a failing one confirmed by
#     a rerun; it prints the false-alarm and detection rates;
#  3. a comparison of two of those nights as markdown (compare.md) with its
#     overlay plots (overlay/), the base against the first slowed10 night.
#
#   ./scripts/gpu-build                      # on the CPU machine
#   OUT=/some/dir bench/gpu-nights.sh        # on the GPU machine (device tool: $OUT is set)
#
# It should print, last, lines such as
#   identical nights: 0/10 flagged before --confirm, 0/10 after
#   slowed: 10/10 flagged, 10/10 confirmed by a rerun
#   slowed10: 10/10 flagged, 10/10 confirmed by a rerun
# and take 5-7 minutes (about 12 s a night). NIGHTS=5 halves it; two
# halves, each against its own base night, make ten comparisons where one
# command may not run for seven minutes. FULL_NIGHT=0 skips steps 1 and 3
# (the second half needs only the rates).
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
bin=$root/dist/gpu
out=${OUT:-$bin/nights}
mkdir -p "$out"
unxz() { # xz, or Python's lzma where xz is missing
	if command -v xz >/dev/null; then xz -d -f "$1"; else python3 -c 'import lzma,shutil,sys,os; f=sys.argv[1]; shutil.copyfileobj(lzma.open(f), open(f[:-3],"wb")); os.chmod(f[:-3],0o755); os.remove(f)' "$1"; fi
}
[ -e "$bin/kvharness.xz" ] && unxz "$bin/kvharness.xz"
[ -x "$bin/kvharness" ] || { echo "gpu-nights: no $bin/kvharness; run ./scripts/gpu-build first (on a machine with Go)"; exit 2; }
# The kvharness binary serves the bundled plugins.
mkdir -p "$bin/plugins"
for p in fusedstore bf16scatter; do
	printf '#!/bin/sh\nexec "%s" serve-plugin %s "$@"\n' "$bin/kvharness" "$p" >"$bin/plugins/$p"
	chmod +x "$bin/plugins/$p"
done
export KVHARNESS_PLUGIN_DIR=$bin/plugins KVHARNESS=$bin/kvharness
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader || true
t0=$SECONDS
full=${FULL_NIGHT:-1}
if [ "$full" != 0 ]; then
rm -rf "$out/night"
"$KVHARNESS" bench --matrix bench/matrix-gpu.json --strict --format md --out "$out/night" >"$out/night.md" 2>"$out/night.log" ||
	{ echo "gpu-nights: the full night failed:"; tail -5 "$out/night.log"; }
echo "full night: $((SECONDS - t0)) s; $(grep -c '^|' "$out/night.md") table lines in night.md, plots in $out/night/plots"
fi
rm -rf "$out/nights"
MATRIX=bench/matrix-gpu-nights.json NIGHTS=${NIGHTS:-10} bench/nights.sh "$out/nights"
rc=$?
[ "$full" != 0 ] || exit $rc
"$KVHARNESS" compare --strict --ignore variant --filter /plugin:fusedstore --format md --plots "$out/overlay" \
	"$out/nights/base/bench.txt" "$out/nights/slowed10-1/bench.txt" >"$out/compare.md" 2>/dev/null
echo "compare.md and overlay/: the base night against the first slowed10 night; $((SECONDS - t0)) s in all"
exit $rc
