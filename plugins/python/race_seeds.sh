#!/usr/bin/env bash
# How the incident's store is reported across seeds, on the GPU machine
# (no Go there), from the repository root, after ./scripts/gpu-build on a
# machine with Go:
#
#   plugins/python/race_seeds.sh           # torchscatter (pool[loc] = rows in PyTorch), 20 seeds
#   PLUGIN=bf16scatter SEEDS=20 plugins/python/race_seeds.sh
#
# Each seed runs `kvharness check --padding count --backend cuda` on the
# pad-unaware store and reads its JSON report: the property the failure
# leads with, whether it is FLAKY, and whether the case found was a race (a
# padded row's stale slot a valid row's: two writers of one slot, reported
# as "padding (race)" with how many runs of it showed the corruption). The
# last line counts them: all SEEDS reports should lead with padding, none
# flaky ("race_seeds.sh: PASS"). A pad-unaware kernel corrupts a slot in
# every run when its padded rows aim at other requests' slots, which the
# generator prefers; a race shows only when the padded write lands last,
# and is named as one rather than hedged.
#
# Environment: KVHARNESS (default dist/gpu/kvharness), PLUGIN (default the
# torchscatter manifest), SEEDS (20), CASES (2000), BACKEND (cuda), OUT_DIR
# or OUT (results, default a temporary folder).
set -uo pipefail
cd "$(dirname "$0")/../.."
kvh=${KVHARNESS:-dist/gpu/kvharness}
if [ ! -x "$kvh" ] && [ -e "$kvh.xz" ]; then
	python3 -c 'import lzma,shutil,sys,os; f=sys.argv[1]; shutil.copyfileobj(lzma.open(f), open(f[:-3],"wb")); os.chmod(f[:-3],0o755)' "$kvh.xz"
fi
[ -x "$kvh" ] || { echo "race_seeds.sh: $kvh not found; run ./scripts/gpu-build on a machine with Go first" >&2; exit 2; }
plugin=${PLUGIN:-plugins/python/torchscatter/kvharness-plugin.json}
seeds=${SEEDS:-20}
cases=${CASES:-2000}
backend=${BACKEND:-cuda}
out=${OUT_DIR:-${OUT:-$(mktemp -d)}}
mkdir -p "$out"
for s in $(seq 1 "$seeds"); do
	"$kvh" check --plugin "$plugin" --backend "$backend" --layout bf16 --padding count --seed "$s" --cases "$cases" \
		--timeout 60s --json --results "$out/results-$s" >"$out/seed-$s.json" 2>"$out/seed-$s.err"
	echo "$?" >"$out/seed-$s.code"
done
python3 - "$out" "$seeds" <<'PY'
import json, sys
out, seeds = sys.argv[1], int(sys.argv[2])
lead = {}
padding = races = flaky = 0
for s in range(1, seeds + 1):
    try:
        run = json.load(open(f"{out}/seed-{s}.json"))
        f = run["verdicts"][0].get("failure") or {}
    except Exception as e:  # noqa: BLE001
        print(f"seed {s:2d}: no report ({e}); see {out}/seed-{s}.err")
        continue
    prop = f.get("property", "none")
    lead[prop] = lead.get(prop, 0) + 1
    race = f.get("race")
    padding += prop == "padding"
    races += race is not None
    flaky += bool(f.get("flaky"))
    note = ""
    if race:
        note = f"; a race: {race['writers']}, the padded write last in {race['hits']} of {race['runs']} runs" + \
            (", shrunk to a case without it" if race.get("of_case_found") else "")
    print(f"seed {s:2d}: leads with {prop}{' (FLAKY)' if f.get('flaky') else ''}, shrunk to {json.dumps(f.get('case', {}).get('loc'))}{note}")
print(f"{seeds} seeds: {padding} reports lead with padding ({races} found as races), {flaky} flaky; by property: {lead}")
print("race_seeds.sh: " + ("PASS" if padding == seeds and flaky == 0 else "FAIL"))
PY
