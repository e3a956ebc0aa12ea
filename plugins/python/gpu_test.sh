#!/usr/bin/env bash
# GPU checks of the Python plugins, on the GPU machine (no Go there), from
# the repository root, after ./scripts/gpu-build on a machine with Go:
#
#   plugins/python/gpu_test.sh
#
# 1. tritonstore's arithmetic, bit for bit against the numpy reference
#    (plugins/python/tritonstore/selftest.py);
# 2. kvharness check of tritonstore on the cuda backend: passes (exit 0);
# 3. kvharness check of torchscatter on the cuda backend: caught under
#    padding (exit 1), clean with --padding none (exit 0). Eager only:
#    Python plugins have no CUDA-graph mode (--graph);
# 4. kvharness bench of torchscatter, tritonstore and fusedstore on the
#    same cells (eager mode, --quick).
#
# Environment: KVHARNESS (the CLI, default dist/gpu/kvharness),
# KVHARNESS_PLUGIN_DIR (bundled Go plugins, default dist/gpu/plugins),
# OUT_DIR (results and bench output, default a temporary folder), CASES
# (per layout × padding, default 200). Exit status 0 when every step did
# what it should.
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
kvh=${KVHARNESS:-$root/dist/gpu/kvharness}
export KVHARNESS_PLUGIN_DIR=${KVHARNESS_PLUGIN_DIR:-$root/dist/gpu/plugins}
out=${OUT_DIR:-$(mktemp -d)}
cases=${CASES:-200}
status=0
mkdir -p "$out"

# expect CODE SECONDS NAME CMD...: runs CMD under a deadline and checks its
# exit status.
expect() {
	local want=$1 limit=$2 name=$3
	shift 3
	echo
	echo "== $name"
	echo "\$ $*"
	timeout "$limit" "$@"
	local got=$?
	if [ "$got" -eq "$want" ]; then
		echo "-- $name: exit $got, as expected"
	else
		echo "-- $name: exit $got, want $want: FAILED"
		status=1
	fi
}

[ -x "$kvh" ] || { echo "gpu_test.sh: $kvh not found; run ./scripts/gpu-build on a machine with Go first" >&2; exit 2; }
echo "== environment"
python3 - <<'EOF'
import importlib
for m in ("grpc", "google.protobuf", "numpy", "torch", "cupy", "triton"):
    try:
        print(f"  {m:16s} {getattr(importlib.import_module(m), '__version__', '?')}")
    except Exception as e:  # noqa: BLE001
        print(f"  {m:16s} MISSING ({e})")
EOF
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | sed 's/^/  /'

# The manifests say "mtls": false: pip's grpcio (BoringSSL) cannot take
# go-plugin's P-521 client certificate (see plugins/python/README.md).
torch_manifest=plugins/python/torchscatter/kvharness-plugin.json
triton_manifest=plugins/python/tritonstore/kvharness-plugin.json

expect 0 60 "tritonstore arithmetic (selftest)" python3 plugins/python/tritonstore/selftest.py
expect 0 60 "check tritonstore --backend cuda" "$kvh" check --plugin "$triton_manifest" --backend cuda \
	--cases "$cases" --timeout 60s --results "$out/results"
expect 1 40 "check torchscatter --backend cuda (the incident: caught)" "$kvh" check --plugin "$torch_manifest" \
	--backend cuda --cases "$cases" --timeout 60s --results "$out/results"
expect 0 40 "check torchscatter --backend cuda --padding none" "$kvh" check --plugin "$torch_manifest" \
	--backend cuda --padding none --cases "$cases" --timeout 60s --results "$out/results"
expect 0 120 "bench torchscatter, tritonstore, fusedstore" "$kvh" bench --plugin "$torch_manifest" \
	--plugin "$triton_manifest" --plugin fusedstore --layout bf16,fp8-paged --tokens 1,512,32768 \
	--mode eager --quick --backend cuda --timeout 60s --out "$out/bench"

echo
[ "$status" -eq 0 ] && echo "gpu_test.sh: PASS (output in $out)" || echo "gpu_test.sh: FAIL (output in $out)"
exit "$status"
