package plugin

import (
	"strings"
)

// Finding is one error compute-sanitizer reported: its first line, the
// kernel it names, and the record as printed.
type Finding struct {
	Tool    string   `json:"tool"`
	Message string   `json:"message"`          // "Invalid __global__ write of size 16 bytes"
	Kernel  string   `json:"kernel,omitempty"` // "fusedstore_bf16"
	Address string   `json:"address,omitempty"`
	Lines   []string `json:"lines"` // the record, the sanitizer's prefix dropped
}

func (f Finding) String() string {
	s := f.Tool + ": " + f.Message
	if f.Kernel != "" {
		s += " in kernel " + f.Kernel
	}
	if f.Address != "" {
		s += " (" + f.Address + ")"
	}
	return s
}

// notFindings are the sanitizer's lines that report no error.
var notFindings = []string{"COMPUTE-SANITIZER", "SUMMARY:", "Target application returned an error", "Warning:",
	"This can happen", "No errors", "Tool ", "Running "}

// continuations start the lines of a record after its first.
var continuations = []string{"at ", "by thread", "Address ", "and is ", "Saved host backtrace", "Host Frame", "Device Frame",
	"in ", "Not written", "Sync mask", "These unused", "is located", "[...]"}

// ParseSanitizer reads compute-sanitizer's text output: records of a
// first line and indented lines after it, separated by a line of the
// prefix alone, with the banner and the summaries around them. Lines
// that are not the sanitizer's (the application's own) are skipped.
func ParseSanitizer(tool, text string) []Finding {
	var out []Finding
	var cur *Finding
	flush := func() {
		if cur != nil && isFinding(cur.Message) {
			out = append(out, *cur)
		}
		cur = nil
	}
	for _, raw := range strings.Split(text, "\n") {
		if !strings.HasPrefix(raw, "=") {
			continue
		}
		body := strings.TrimLeft(strings.TrimRight(raw, "\r"), "=")
		line := strings.TrimSpace(body)
		switch {
		case line == "" || !isFinding(line): // a separator, the banner, a summary
			flush()
		case cur != nil && (strings.HasPrefix(body, "  ") || hasPrefix(line, continuations)):
			cur.add(line)
		default:
			flush()
			cur = &Finding{Tool: tool, Message: line, Lines: []string{line}}
			cur.Kernel = raceKernel(line)
		}
	}
	flush()
	return out
}

func isFinding(msg string) bool {
	for _, n := range notFindings {
		if strings.HasPrefix(msg, n) || strings.Contains(msg, "SUMMARY:") {
			return false
		}
	}
	return true
}

func hasPrefix(s string, ps []string) bool {
	for _, p := range ps {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// add appends a record line, taking the kernel from the first "at" line
// and the address from an "Address" line.
func (f *Finding) add(line string) {
	f.Lines = append(f.Lines, line)
	switch {
	case strings.HasPrefix(line, "at ") && f.Kernel == "":
		f.Kernel = kernelAt(strings.TrimPrefix(line, "at "))
	case strings.HasPrefix(line, "Address ") && f.Address == "":
		f.Address = line
	}
}

// kernelAt reads the kernel of an "at" line in its forms:
// "fusedstore_bf16+0x2d0", "scale(float*, int)+0x50 in scale.cu:14",
// "k():0x160 in demo.cu:6", and the older "0x150 in kernel(int*, int)".
func kernelAt(s string) string {
	if strings.HasPrefix(s, "0x") {
		if _, name, ok := strings.Cut(s, " in "); ok {
			return funcOnly(name)
		}
		return ""
	}
	for _, sep := range []string{"+0x", ":0x", " in "} {
		if i := strings.Index(s, sep); i >= 0 {
			s = s[:i]
		}
	}
	return funcOnly(s)
}

// raceKernel reads the kernel of racecheck's summary line: "Error: Race
// reported between Write access at k(int*)+0x1f0 in r.cu:12 and ...".
func raceKernel(line string) string {
	_, rest, ok := strings.Cut(line, " access at ")
	if !ok {
		return ""
	}
	return kernelAt(rest)
}

// funcOnly drops a function's argument list (and a file:line: before a
// name, as older tools printed).
func funcOnly(s string) string {
	if i := strings.IndexByte(s, '('); i >= 0 {
		s = s[:i]
	}
	if i := strings.LastIndexByte(s, ':'); i >= 0 && !strings.Contains(s[i:], "::") {
		s = s[i+1:]
	}
	return strings.TrimSpace(s)
}
