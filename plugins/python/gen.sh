#!/usr/bin/env bash
# Regenerates the Python SDK's protobuf and gRPC stubs in kvharness_sdk/_gen
# from the protocol's own sources, so they cannot drift from what the Go
# harness speaks:
#
#   harness/protocol/*.proto                   the base Plugin service (kvharness.proto)
#                                              and one service per kernel kind
#   go-plugin's internal/plugin/grpc_*.proto   GRPCController, GRPCBroker, GRPCStdio
#                                              (from the Go module cache, at the
#                                              version go.mod requires)
#   proto/health.proto                         grpc.health.v1 (go-plugin pings it)
#
# Needs protoc and grpc_python_plugin (Debian: protobuf-compiler and
# protobuf-compiler-grpc) and Go (to locate go-plugin). The stubs are
# committed: plugins need neither protoc nor grpcio-tools to run. protoc 3.21
# writes stubs that protobuf runtimes 4.21 and later import.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out="$here/kvharness_sdk/_gen"

for tool in protoc grpc_python_plugin go; do
	command -v "$tool" >/dev/null || {
		echo "gen.sh: $tool not found; install protobuf-compiler, protobuf-compiler-grpc and Go" >&2
		exit 1
	}
done
goplugin=$(cd "$root" && go list -m -f '{{.Dir}}' github.com/hashicorp/go-plugin)
[ -n "$goplugin" ] && [ -d "$goplugin/internal/plugin" ] || {
	echo "gen.sh: go-plugin's sources are not in the module cache; run 'go mod download' in $root" >&2
	exit 1
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$root"/harness/protocol/*.proto "$goplugin"/internal/plugin/grpc_{controller,broker,stdio}.proto \
	"$here/proto/health.proto" "$tmp/"
chmod u+w "$tmp"/*.proto # the module cache is read-only

rm -f "$out"/*_pb2.py "$out"/*_pb2_grpc.py
(cd "$tmp" && protoc -I. --python_out="$out" --grpc_out="$out" \
	--plugin=protoc-gen-grpc="$(command -v grpc_python_plugin)" \
	$(cd "$root/harness/protocol" && ls *.proto) grpc_controller.proto grpc_broker.proto grpc_stdio.proto health.proto)

# protoc writes top-level imports (import kvharness_pb2); the stubs live in
# a package, so make the imports between them relative.
sed -i -E 's/^import ([a-z_]+_pb2) as /from . import \1 as /' "$out"/*_pb2.py "$out"/*_pb2_grpc.py
cat >"$out/__init__.py" <<'PY'
"""Generated protobuf and gRPC stubs. Do not edit: run plugins/python/gen.sh."""
PY
echo "gen.sh: wrote $(ls "$out" | wc -l) files into ${out#"$root"/}"
