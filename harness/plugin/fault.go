package plugin

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/grpc/codes"

	"github.com/kvharness/kvharness/harness/internal/textsafe"
)

// FaultKind names what went wrong with a plugin process.
type FaultKind string

// Fault kinds.
const (
	Crash     FaultKind = "crash"     // the process died: panic, signal, exit
	Hang      FaultKind = "hang"      // a call outlived its deadline; the process was killed
	Handshake FaultKind = "handshake" // the process did not start or did not speak the protocol
	Protocol  FaultKind = "protocol"  // it answered something malformed or inconsistent
	Refused   FaultKind = "error"     // it answered a valid request with an error
)

// Fault is a plugin failure, as opposed to a kernel that ran and wrote
// wrong bytes (an invariant violation).
type Fault struct {
	Kind   FaultKind
	Plugin string // plugin name or path
	Call   string // RPC name, or "start"
	Detail string // exit status, signal, deadline, or the plugin's message
	Stderr string // last lines the plugin wrote to stderr
	// Panic is the start of the crash report a crashed plugin wrote (a Go
	// panic, a Python traceback): its message and its own frames.
	Panic *Panic
	Code  codes.Code
	Err   error
	// Between says the process had died before the call was made: between
	// calls, while the plugin was idle (killed from outside, or by
	// something it left running). No case caused it, and none is blamed.
	Between bool
}

func (f *Fault) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "plugin %s: %s during %s: %s", textsafe.String(f.Plugin), f.Kind, f.Call, textsafe.String(f.Detail))
	if f.Panic != nil {
		fmt.Fprintf(&b, "\n%s", indent(safeLines(f.Panic.String())))
	} else if s := strings.TrimSpace(f.Stderr); s != "" {
		fmt.Fprintf(&b, "\nplugin stderr (last lines):\n%s", indent(safeLines(s)))
	}
	return b.String()
}

func (f *Fault) Unwrap() error { return f.Err }

// safeLines escapes control characters line by line: the plugin's own
// line breaks stay, its escape sequences do not reach the terminal.
func safeLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = textsafe.String(l)
	}
	return strings.Join(lines, "\n")
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(s, "\n", "\n    ")
}

// AsFault returns the Fault in err's chain, if any.
func AsFault(err error) (*Fault, bool) {
	var f *Fault
	ok := errors.As(err, &f)
	return f, ok
}

// kernelCalls are the calls that run a kernel.
var kernelCalls = []string{"Store", "StoreBatch", "Read", "Transfer"}

// InKernel reports whether the fault is the plugin's process dying while
// it ran a kernel (a panic, a signal of its own, an exit, a device fault):
// the kernel's bug, to be reported with its case like a violation. A
// process killed by SIGKILL is not: that is the OOM killer or the harness.
func (f *Fault) InKernel() bool {
	return f.Kind == Crash && !f.Between && slices.Contains(kernelCalls, f.Call) && !strings.HasSuffix(f.Detail, "signal killed")
}
