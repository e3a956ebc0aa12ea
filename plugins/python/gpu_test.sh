#!/usr/bin/env bash
# GPU checks of the Python SDK and plugins, on the GPU machine (no Go
# there), from the repository root, after ./scripts/gpu-build on a machine
# with Go:
#
#   plugins/python/gpu_test.sh      # meant to finish within 6 minutes on an H200 (each step prints its time)
#
# What runs, and what each step must end with (the script checks the exit
# status, and for some steps a line of the output):
#
#  1. the SDK's driver calls load (libcuda through ctypes) and tritonstore's
#     arithmetic is bit-exact with the numpy reference (selftest.py);
#  2. the example stores, 10,000 cases per padding convention, eager and
#     --graph: indexerstore (fp8-paged, Triton, eps 1e-8, x*(1/s)) and
#     dsv4store (dsv4-main, Triton, ue8m0, pad byte untouched): exit 0;
#  3. the same stores' undeclared-eps variants: exit 1, the report naming
#     eps;
#  4. torchscatter --graph --padding count: exit 1, found at case 1 (the
#     incident, under graph replay); tritonstore --graph: exit 0;
#     pygraphonly (sizes its store from the host's count): exit 0 eager,
#     exit 1 under --graph (proof that replays replay);
#  4b. flashfp8store (vllm-flash-fp8, Triton, static k_scale/v_scale): its
#     pytest file passes (the Triton kernel byte for byte with its numpy
#     twin), and kvharness check passes eager and --graph, at drawn shapes
#     and at 8 heads × 128: exit 0;
#  5. topkread (read) and pagetransfer (transfer) on the GPU: exit 0;
#     indexerstore with arenas shared by IPC handle instead of file
#     descriptor: exit 0;
#  6. kvharness mutants on the Python plugins (eager, and --graph for the
#     stores; the example stores also judged bit-exact, --value exact):
#     every mutant killed, controls pass: exit 0, "mutants killed";
#  7. a bench of the examples with tritonstore and fusedstore, eager and
#     graph, rotated over 4 pools: exit 0.
#
# Steps 2, 3 and 6 judge fp8 bytes by the declared recipe, as kvharness
# does by default (check --value recipe), staging int32 slots for
# dsv4store. Against an older harness that judged every store by the
# default recipe (bit-exact, eps 1e-4, pad bytes zero), run with
# HARNESS_RECIPES=0: step
# 2 then runs the examples' default-recipe controls (the same kernels
# computing the default recipe; they must pass there too) at 10,000 cases,
# the declared stores at 200 cases expecting exit 1 with value violations,
# and step 3 and the examples' mutants are left out.
#
# Environment: KVHARNESS (the CLI, default dist/gpu/kvharness),
# OUT_DIR or OUT (results, default a temporary folder), CASES (step 2's
# cases per padding, default 10000), HARNESS_RECIPES (default 1). The
# last line is "gpu_test.sh: PASS" when every step did what it should.
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
bin=$root/dist/gpu
kvh=${KVHARNESS:-$bin/kvharness}
out=${OUT_DIR:-${OUT:-$(mktemp -d)}}
cases=${CASES:-10000}
recipes=${HARNESS_RECIPES:-1}
python=${KVHARNESS_PYTHON:-python3} # the plugins' python (see plugins/python/README.md)
mkdir -p "$out/logs"
rm -f "$out/logs/failed"

# gpu-build leaves the binary xz-compressed; unpack it as scripts/gpu-test does.
if [ ! -x "$kvh" ] && [ -e "$kvh.xz" ]; then
	if command -v xz >/dev/null; then xz -d -k -f "$kvh.xz"; else
		python3 -c 'import lzma,shutil,sys,os; f=sys.argv[1]; shutil.copyfileobj(lzma.open(f), open(f[:-3],"wb")); os.chmod(f[:-3],0o755)' "$kvh.xz"
	fi
fi
[ -x "$kvh" ] || { echo "gpu_test.sh: $kvh not found; run ./scripts/gpu-build on a machine with Go first" >&2; exit 2; }
# The kvharness binary serves the bundled Go plugins (fusedstore for the bench).
mkdir -p "$bin/plugins"
for p in fusedstore; do
	printf '#!/bin/sh\nexec "%s" serve-plugin %s "$@"\n' "$kvh" "$p" >"$bin/plugins/$p"
	chmod +x "$bin/plugins/$p"
done
export KVHARNESS_PLUGIN_DIR=${KVHARNESS_PLUGIN_DIR:-$bin/plugins}

# expect CODE PATTERN NAME CMD...: runs CMD, logs its output, and checks its
# exit status and (unless PATTERN is "") that a line of its output matches
# PATTERN (grep -E).
expect() {
	local want=$1 pattern=$2 name=$3
	shift 3
	local log="$out/logs/$(echo "$name" | tr -c 'A-Za-z0-9\n' '_').log" t0=$SECONDS
	"$@" >"$log" 2>&1
	local got=$?
	local secs=$((SECONDS - t0)) verdict="as expected"
	if [ "$got" -ne "$want" ]; then
		verdict="want $want: FAILED"
	elif [ -n "$pattern" ] && ! grep -qE "$pattern" "$log"; then
		verdict="but no line matches /$pattern/: FAILED"
	fi
	# Steps may run in the background (both): failures go to a file.
	[ "$verdict" = "as expected" ] || echo "$name" >>"$out/logs/failed"
	{ # one write, so that steps run side by side do not interleave their reports
		echo "-- $name: exit $got, $verdict ($secs s)"
		grep -E '^(FAIL|plugin|  found at|[a-z0-9-]+ +(none|count|sink|minus1|read|mixed|runs|singles|edges) )|mutants|killed|survived|eps' "$log" |
			head -12 | sed 's/^/     /'
		[ "$verdict" = "as expected" ] || tail -20 "$log" | sed 's/^/   | /'
	} >"$log.report"
	cat "$log.report"
}

# both EXPECT...: runs an expect in the background, so that two checks (of
# 4 plugin processes each) share the machine; wait collects them.
both() {
	"$@" &
}

echo "== environment"
"$python" - <<'EOF'
import importlib
for m in ("grpc", "google.protobuf", "numpy", "torch", "triton"):
    try:
        print(f"  {m:16s} {getattr(importlib.import_module(m), '__version__', '?')}")
    except Exception as e:  # noqa: BLE001
        print(f"  {m:16s} MISSING ({e})")
EOF
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | sed 's/^/  /'

py=plugins/python
idx=$py/indexerstore/kvharness-plugin.json
dsv=$py/dsv4store/kvharness-plugin.json
ts=$py/torchscatter/kvharness-plugin.json
tri=$py/tritonstore/kvharness-plugin.json
gonly=$py/testdata/graphonly/kvharness-plugin.json
res=(--results "$out/results" --timeout 60s --backend cuda)
fp8=(--layout fp8-paged)
mla=(--layout dsv4-main --head-dim 512)

echo
echo "== 1. driver calls and Triton arithmetic"
expect 0 "" "SDK driver calls" "$python" -c "import sys; sys.path.insert(0, '$py')
from kvharness_sdk.cudadrv import Driver
d = Driver.get()
with d.on(0): pass
print('libcuda loaded, primary context of device 0 pushed and popped')"
expect 0 "selftest PASS" "tritonstore selftest" "$python" $py/tritonstore/selftest.py

echo
echo "== 2. example stores, $cases cases per padding, eager and graph"
if [ "$recipes" = 1 ]; then
	both expect 0 "" "indexerstore eager" "$kvh" check --plugin "$idx" "${fp8[@]}" --cases "$cases" "${res[@]}"
	both expect 0 "" "dsv4store eager" "$kvh" check --plugin "$dsv" "${mla[@]}" --cases "$cases" "${res[@]}"
	wait
	both expect 0 "" "indexerstore --graph" "$kvh" check --plugin "$idx" "${fp8[@]}" --graph --cases "$cases" "${res[@]}"
	both expect 0 "" "dsv4store --graph" "$kvh" check --plugin "$dsv" "${mla[@]}" --graph --cases "$cases" "${res[@]}"
	wait
else
	for mode in eager graph; do
		g=()
		[ "$mode" = graph ] && g=(--graph)
		both expect 0 "" "indexerstore default-recipe $mode" "$kvh" check --plugin "$idx" --variant default-recipe "${fp8[@]}" \
			"${g[@]}" --cases "$cases" "${res[@]}"
		both expect 0 "" "dsv4store default-recipe $mode" "$kvh" check --plugin "$dsv" --variant default-recipe "${mla[@]}" \
			"${g[@]}" --cases "$cases" "${res[@]}"
		wait
	done
	expect 1 "property value" "indexerstore (default-recipe harness)" "$kvh" check --plugin "$idx" "${fp8[@]}" --cases 200 "${res[@]}"
	expect 1 "property value" "dsv4store (default-recipe harness)" "$kvh" check --plugin "$dsv" "${mla[@]}" --cases 200 "${res[@]}"
fi

if [ "$recipes" = 1 ]; then
	echo
	echo "== 3. the examples without their eps declared"
	expect 1 "eps" "indexerstore undeclared-eps" "$kvh" check --plugin "$idx" --variant undeclared-eps "${fp8[@]}" --cases 500 "${res[@]}"
	expect 1 "eps" "dsv4store undeclared-eps" "$kvh" check --plugin "$dsv" --variant undeclared-eps "${mla[@]}" --cases 500 "${res[@]}"
fi

echo
echo "== 4. graph replay: the incident, and proof that replays replay"
expect 1 "found at case 1 " "torchscatter --graph --padding count" "$kvh" check --plugin "$ts" --graph --padding count \
	--cases 200 "${res[@]}"
expect 0 "" "tritonstore --graph" "$kvh" check --plugin "$tri" --graph --cases 500 "${res[@]}"
expect 0 "" "pygraphonly eager" "$kvh" check --plugin "$gonly" --cases 300 "${res[@]}"
expect 1 "property" "pygraphonly --graph" "$kvh" check --plugin "$gonly" --graph --cases 300 "${res[@]}"

echo
echo "== 4b. flashfp8store: vLLM flash fp8 with static scales, in Triton, eager and graph"
ff=$py/flashfp8store/kvharness-plugin.json
expect 0 "passed" "flashfp8store pytest" "$python" -m pytest -q -rs $py/flashfp8store
expect 0 "" "flashfp8store eager" "$kvh" check --plugin "$ff" --layout vllm-flash-fp8 --cases "$cases" "${res[@]}"
expect 0 "" "flashfp8store --graph" "$kvh" check --plugin "$ff" --layout vllm-flash-fp8 --graph --cases "$cases" "${res[@]}"
expect 0 "" "flashfp8store 8x128 --graph" "$kvh" check --plugin "$ff" --layout vllm-flash-fp8 --heads 8 --head-dim 128 \
	--graph --cases "$cases" "${res[@]}"

echo
echo "== 5. read and transfer kernels; arenas by IPC handle"
expect 0 "" "topkread --kernel read" "$kvh" check --plugin $py/topkread/kvharness-plugin.json --kernel read --cases 200 "${res[@]}"
expect 0 "" "pagetransfer" "$kvh" check --plugin $py/pagetransfer/kvharness-plugin.json --cases 100 "${res[@]}"
expect 0 "" "pagetableappend (torch, page-table)" "$kvh" check --plugin $py/pagetableappend/kvharness-plugin.json --cases 200 "${res[@]}"
expect 1 "property padding" "pagetableappend last-page-overrun" "$kvh" check --plugin $py/pagetableappend/kvharness-plugin.json \
	--variant last-page-overrun --cases 200 "${res[@]}"
expect 0 "" "indexerstore by IPC handle" env KVHARNESS_CUDA_SHARING=ipc "$kvh" check --plugin "$idx" --variant default-recipe \
	"${fp8[@]}" --graph --cases 300 "${res[@]}"

echo
echo "== 6. mutants"
m=(--backend cuda --cases 200)
expect 0 "" "mutants topkread, pagetransfer" "$kvh" mutants --plugin $py/topkread/kvharness-plugin.json \
	--plugin $py/pagetransfer/kvharness-plugin.json "${m[@]}"
if [ "$recipes" = 1 ]; then
	# dsv4store declares dsv4-main alone, at head dim 512: mutants finds it.
	expect 0 "2 of 2 mutants killed; 4 controls passed" "mutants indexerstore, dsv4store" "$kvh" mutants --plugin "$idx" --plugin "$dsv" "${m[@]}"
	expect 0 "2 of 2 mutants killed; 4 controls passed" "mutants indexerstore, dsv4store --graph" "$kvh" mutants --plugin "$idx" --plugin "$dsv" --graph "${m[@]}"
	expect 0 "2 of 2 mutants killed; 4 controls passed" "mutants indexerstore, dsv4store --value exact" "$kvh" mutants --plugin "$idx" --plugin "$dsv" --value exact "${m[@]}"
fi

echo
echo "== 7. bench: eager and graph, rotated over 4 pools"
expect 0 "" "bench" "$kvh" bench --plugin "$idx" --plugin "$tri" --plugin fusedstore --layout fp8-paged --tokens 1,512,32768 \
	--mode eager,graph --cache hot --rotate 4 --quick --backend cuda --timeout 60s --out "$out/bench"

echo
if [ -s "$out/logs/failed" ]; then
	echo "gpu_test.sh: FAIL: $(paste -sd, "$out/logs/failed") (logs in $out/logs)"
	exit 1
fi
echo "gpu_test.sh: PASS (logs in $out/logs)"
