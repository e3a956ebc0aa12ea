package main

import (
	"fmt"
	"io"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/protocol"
)

// writeVersion prints the build: the module version, the commit it was
// built from ("+modified" when the tree differed), the toolchain and the
// plugin protocol version this harness speaks.
func writeVersion(w io.Writer) {
	version, rev := "(devel)", buildRevision()
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" {
		version = info.Main.Version
	}
	fmt.Fprintf(w, "kvharness %s, commit %s, %s %s/%s, plugin protocol %d\n",
		version, rev, runtime.Version(), runtime.GOOS, runtime.GOARCH, protocol.Version)
}

// buildRevision is the commit the binary was built from: the one a
// release build stamped, else the one go build recorded, else (go run
// records none) the source tree's HEAD when the binary runs inside it.
func buildRevision() string {
	if buildCommit != "" {
		return buildCommit
	}
	if info, ok := debug.ReadBuildInfo(); ok {
		rev, modified := "", false
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value[:min(len(s.Value), 12)]
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
		if rev != "" && modified {
			return rev + "+modified"
		}
		if rev != "" {
			return rev
		}
	}
	if root, ok := plugin.SourceRoot(); ok {
		if out, err := exec.Command("git", "-C", root, "rev-parse", "--short=12", "HEAD").Output(); err == nil {
			return strings.TrimSpace(string(out)) + " (source tree)"
		}
	}
	return "unknown"
}
