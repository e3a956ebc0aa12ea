package plugin

import (
	"strings"
	"sync"
)

// tail keeps what a plugin wrote to stderr: the last bytes, and, apart
// from them, the start of the last crash report (a Go panic or fatal
// error, a Python traceback). The last lines of a crashed Go plugin are
// the gRPC server's frames; the panic's message and the plugin's own
// frames are at its start, which a rolling tail would have dropped.
type tail struct {
	mu    sync.Mutex
	buf   []byte
	limit int
	line  []byte // the line being written
	crash []byte // from the line that starts the last crash report
	open  bool   // crash is still being written
	eof   chan struct{}
	once  sync.Once
}

// crashLimit bounds a kept crash report: the message and a few dozen
// frames.
const crashLimit = 32 << 10

func newTail(limit int) *tail { return &tail{limit: limit, eof: make(chan struct{})} }

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.limit; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	for _, c := range p {
		if c != '\n' {
			if len(t.line) < crashLimit {
				t.line = append(t.line, c)
			}
			continue
		}
		t.endLine()
	}
	return len(p), nil
}

// endLine files a complete line: it starts a crash report, continues the
// open one, or is only part of the tail.
func (t *tail) endLine() {
	switch {
	case startsCrash(string(t.line)):
		t.crash, t.open = append(append([]byte(nil), t.line...), '\n'), true
	case t.open && len(t.crash) < crashLimit:
		t.crash = append(append(t.crash, t.line...), '\n')
	}
	t.line = t.line[:0]
}

// startsCrash reports whether a stderr line opens a crash report.
func startsCrash(line string) bool {
	for _, p := range []string{"panic: ", "fatal error: ", "Traceback (most recent call last):"} {
		if strings.HasPrefix(line, p) {
			return true
		}
	}
	return false
}

// Lines returns at most n of the last lines, trimmed.
func (t *tail) Lines(n int) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := strings.Split(strings.TrimRight(string(t.buf), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Crash is the last crash report the plugin wrote, parsed; nil if none.
func (t *tail) Crash() *Panic {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.crash) == 0 {
		return nil
	}
	return parsePanic(string(t.crash))
}

// closed marks the end of the plugin's stderr: every line is in.
func (t *tail) closed() { t.once.Do(func() { close(t.eof) }) }
