#!/usr/bin/env bash
# Measures the nightly gate's false-alarm and detection rates on this
# machine: a base night, NIGHTS nights of the same code compared with it
# (each failing one confirmed by a rerun, as bench/nightly.sh does), and
# NIGHTS nights of each deliberately slowed fusedstore variant, compared
# with the base's fusedstore cells (--ignore variant) and confirmed the same
# way. It prints a line per night and the rates; every night and report is
# kept under OUT.
#
#   bench/nights.sh OUT
#
# Environment:
#   KVHARNESS      the kvharness command (default: built from this checkout)
#   MATRIX         the matrix (default bench/matrix-cpu.json)
#   NIGHTS         nights of each kind (default 10)
#   VARIANTS       slowed variants of fusedstore (default "slowed slowed10")
#   COMPARE_FLAGS  more kvharness compare flags (default none)
#
# Exit status: 0 when at most one identical night failed before its rerun,
# none after, and every slowed night was flagged and confirmed; 1 otherwise;
# 2 on an error.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: bench/nights.sh OUT}
nights=${NIGHTS:-10}
matrix=${MATRIX:-bench/matrix-cpu.json}
variants=${VARIANTS:-slowed slowed10}
. bench/lib.sh
[ -n "${KVHARNESS:-}" ] || build_kvharness
serve_bundled_plugins
mkdir -p "$out"
start=$SECONDS
# night DIR ARGS...: one night of the matrix into DIR.
night() {
	local dir=$1
	shift
	[ -f "$dir/cells.jsonl" ] && return 0
	$KVHARNESS bench --matrix "$matrix" --strict --out "$dir" "$@" >"$dir.table" 2>"$dir.log" || {
		echo "nights: bench into $dir failed:" >&2
		tail -3 "$dir.log" >&2
		exit 2
	}
}
# judge NAME ARGS...: compares the base with night NAME (and, when that
# fails, with its rerun too); prints a line and sets first and confirmed
# to compare's exit statuses.
judge() {
	local name=$1
	shift
	local dir=$out/$name flags=(--strict ${COMPARE_FLAGS:-})
	[ "$name" = "${name#same}" ] && flags+=(--ignore variant --filter /plugin:fusedstore)
	first=0
	$KVHARNESS compare "${flags[@]}" "$out/base/bench.txt" "$dir/bench.txt" >"$dir.compare" 2>>"$dir.log" || first=$?
	[ $first -le 1 ] || { echo "nights: compare of $name failed:" >&2; tail -2 "$dir.log" >&2; exit 2; }
	confirmed=$first
	if [ $first -eq 1 ]; then
		night "$dir/rerun" "$@"
		confirmed=0
		$KVHARNESS compare "${flags[@]}" --confirm "$dir/rerun/bench.txt" "$out/base/bench.txt" "$dir/bench.txt" >"$dir.confirmed" 2>>"$dir.log" || confirmed=$?
	fi
	printf '%-12s exit %d, %2d slower cells; confirmed: exit %d (%s s)\n' "$name" $first "$(grep -c '^SLOWER' "$dir.compare")" $confirmed $((SECONDS - start))
}
night "$out/base"
echo "base night: $(head -1 "$out/base.table") ($((SECONDS - start)) s)"
declare -A flagged confirmedN
for i in $(seq 1 "$nights"); do
	night "$out/same-$i"
	judge "same-$i"
	[ $first -eq 1 ] && flagged[same]=$((${flagged[same]:-0} + 1))
	[ $confirmed -eq 1 ] && confirmedN[same]=$((${confirmedN[same]:-0} + 1))
done
for v in $variants; do
	for i in $(seq 1 "$nights"); do
		night "$out/$v-$i" --plugin fusedstore --variant "$v"
		judge "$v-$i" --plugin fusedstore --variant "$v"
		[ $first -eq 1 ] && flagged[$v]=$((${flagged[$v]:-0} + 1))
		[ $confirmed -eq 1 ] && confirmedN[$v]=$((${confirmedN[$v]:-0} + 1))
	done
done
echo
echo "identical nights: ${flagged[same]:-0}/$nights flagged before --confirm, ${confirmedN[same]:-0}/$nights after"
rc=0
[ "${flagged[same]:-0}" -le 1 ] && [ "${confirmedN[same]:-0}" -eq 0 ] || rc=1
for v in $variants; do
	echo "$v: ${flagged[$v]:-0}/$nights flagged, ${confirmedN[$v]:-0}/$nights confirmed by a rerun"
	[ "${confirmedN[$v]:-0}" -eq "$nights" ] || rc=1
done
echo "$(( SECONDS - start )) s in all; nights and reports in $out"
exit $rc
