# What bench/nightly.sh and bench/nights.sh share: the kvharness command of
# this checkout and the plugins it serves. Source it from the repository
# root.

# build_kvharness builds ./harness/cmd/kvharness into a temporary directory
# (removed on exit), stamped with the commit (-dirty when tracked files
# changed), and points KVHARNESS at it; a failed build exits 2. A built
# binary, not go run: go run turns every failing exit into 1, and the
# scripts must tell a regression (1) from an error (2).
build_kvharness() {
	bin=$(mktemp -d)
	trap 'rm -rf "$bin"' EXIT
	local c
	c=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
	[ -z "$(git status --porcelain --untracked-files=no 2>/dev/null)" ] || c=$c-dirty
	go build -ldflags "-X main.buildCommit=$c" -o "$bin/kvharness" ./harness/cmd/kvharness || exit 2
	KVHARNESS=$bin/kvharness
}

# serve_bundled_plugins: the plugins are served by the kvharness binary
# itself, so a night measures the plugins of the build it runs (and starts
# each pass's plugin processes without building them). It does nothing
# where KVHARNESS_PLUGIN_DIR is set or the binary cannot serve them.
serve_bundled_plugins() {
	if [ -z "${KVHARNESS_PLUGIN_DIR:-}" ] && "$KVHARNESS" help >/dev/null 2>&1; then
		plugins=$(mktemp -d)
		for p in fusedstore bf16scatter fp8store; do
			printf '#!/bin/sh\nexec "%s" serve-plugin %s "$@"\n' "$KVHARNESS" "$p" >"$plugins/$p"
			chmod +x "$plugins/$p"
		done
		export KVHARNESS_PLUGIN_DIR=$plugins
	fi
}
