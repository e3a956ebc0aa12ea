package plugin

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Panic is how a crashed plugin said it died: the message of its panic
// (or fatal error, or Python exception) and the frames of its own code,
// with the runtime's, gRPC's, go-plugin's and the kvharness SDK's left
// out, innermost first.
type Panic struct {
	Message string  // "panic: ..." as printed, continuation lines included
	Frames  []Frame // the plugin's own frames
	Other   int     // frames left out
}

// Frame is one call in a crash report.
type Frame struct {
	Func string // e.g. "github.com/you/plugin/kernel.(*store).Store"
	File string // path
	Line int
}

func (f Frame) String() string { return fmt.Sprintf("%s (%s:%d)", f.Func, f.File, f.Line) }

// maxFrames bounds the frames kept.
const maxFrames = 8

// Code whose frames are not the plugin author's: Go functions by their
// package path, Python frames by their file. A crash report shows the
// plugin's own frames.
var (
	foreignFuncs = []string{"runtime.", "panic(", "google.golang.org/", "github.com/hashicorp/", "golang.org/x/", "net.",
		"net/", "sync.", "internal/", "syscall.", "os.", "github.com/kvharness/kvharness/harness/sdk.", "github.com/kvharness/kvharness/harness/sdk/",
		"github.com/kvharness/kvharness/harness/protocol"}
	foreignFiles = []string{"/grpc/", "/kvharness_sdk/", "/concurrent/futures/", "/threading.py", "/socketserver.py"}
)

func isForeign(fn, file string) bool {
	for _, p := range foreignFuncs {
		if strings.HasPrefix(fn, p) {
			return true
		}
	}
	for _, p := range foreignFiles {
		if strings.Contains(file, p) {
			return true
		}
	}
	return false
}

// parsePanic reads a crash report as a Go runtime or Python prints it.
func parsePanic(s string) *Panic {
	if strings.HasPrefix(s, "Traceback (most recent call last):") {
		return parseTraceback(s)
	}
	return parseGo(s)
}

var goFile = regexp.MustCompile(`^\t(.+):(\d+)(?: \+0x[0-9a-f]+)?$`)

// parseGo reads a Go panic: message lines up to the first blank one, then
// a goroutine header and pairs of function and file lines.
func parseGo(s string) *Panic {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	p := &Panic{}
	i := 0
	for ; i < len(lines) && lines[i] != "" && !strings.HasPrefix(lines[i], "goroutine "); i++ {
	}
	p.Message = strings.Join(lines[:min(i, 6)], "\n")
	for ; i+1 < len(lines); i++ {
		m := goFile.FindStringSubmatch(lines[i+1])
		if m == nil || strings.HasPrefix(lines[i], "\t") || strings.HasPrefix(lines[i], "created by ") {
			continue
		}
		n, _ := strconv.Atoi(m[2])
		p.add(Frame{Func: funcName(lines[i]), File: m[1], Line: n})
		i++
	}
	return p
}

func (p *Panic) add(f Frame) {
	if isForeign(f.Func, f.File) || len(p.Frames) == maxFrames {
		p.Other++
		return
	}
	p.Frames = append(p.Frames, f)
}

// funcName drops a Go frame's argument list: the parenthesised tail that
// matches the line's last parenthesis.
func funcName(line string) string {
	line = strings.TrimSpace(line)
	if !strings.HasSuffix(line, ")") {
		return line
	}
	depth := 0
	for i := len(line) - 1; i >= 0; i-- {
		switch line[i] {
		case ')':
			depth++
		case '(':
			if depth--; depth == 0 {
				return line[:i]
			}
		}
	}
	return line
}

var pyFile = regexp.MustCompile(`^\s*File "([^"]+)", line (\d+), in (.+)$`)

// parseTraceback reads a Python traceback: frames outermost first, the
// exception last.
func parseTraceback(s string) *Panic {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	p := &Panic{Message: lines[len(lines)-1]}
	var frames []Frame
	for _, l := range lines {
		if m := pyFile.FindStringSubmatch(l); m != nil {
			n, _ := strconv.Atoi(m[2])
			frames = append(frames, Frame{Func: m[3], File: m[1], Line: n})
		}
	}
	for i := len(frames) - 1; i >= 0; i-- { // innermost first, as Go prints them
		p.add(frames[i])
	}
	return p
}

// String is the report's form: the message, then "at" a frame a line.
func (p *Panic) String() string {
	var b strings.Builder
	b.WriteString(p.Message)
	for _, f := range p.Frames {
		fmt.Fprintf(&b, "\n  at %v", f)
	}
	if p.Other > 0 {
		fmt.Fprintf(&b, "\n  (%d frames of the runtime, gRPC and the SDK left out)", p.Other)
	}
	return b.String()
}
