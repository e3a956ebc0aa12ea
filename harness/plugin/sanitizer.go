package plugin

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// SanitizerTools are the compute-sanitizer tools a check can run plugins
// under.
var SanitizerTools = []string{"memcheck", "initcheck", "racecheck", "synccheck"}

// Timeouts for a plugin under a sanitizer, which instruments every
// kernel: starting it (the sanitizer attaches to the process), one call,
// and its exit, during which the sanitizer writes its summary.
const (
	SanitizerStartTimeout = 2 * time.Minute
	SanitizerCallTimeout  = time.Minute
	SanitizerGrace        = time.Minute
)

// ErrNoSanitizer is returned when compute-sanitizer cannot be found.
var ErrNoSanitizer = errors.New("compute-sanitizer not found")

// Sanitizer runs plugin processes under NVIDIA's compute-sanitizer and
// collects what it reports. Every plugin started with the same Options
// shares one: findings of a process that has exited stay with it until
// the plugin they belong to asks for them (or Orphans does).
type Sanitizer struct {
	Tool string // one of SanitizerTools
	Exe  string // compute-sanitizer's path
	Logs string // folder for the sanitizer's log files, one per process

	mu      sync.Mutex
	seq     int
	orphans []owned // findings of exited processes, not yet asked for
}

type owned struct {
	p *Plugin
	f Finding
}

// NewSanitizer finds compute-sanitizer (on PATH, else in the CUDA
// toolkit's bin folder) for a tool whose logs go into the logs folder.
func NewSanitizer(tool, logs string) (*Sanitizer, error) {
	if !slices.Contains(SanitizerTools, tool) {
		return nil, fmt.Errorf("sanitizer tool %q: want one of %s", tool, strings.Join(SanitizerTools, ", "))
	}
	exe, err := exec.LookPath("compute-sanitizer")
	if err != nil {
		exe = "/usr/local/cuda/bin/compute-sanitizer"
		if _, serr := os.Stat(exe); serr != nil {
			return nil, fmt.Errorf("%w on PATH or in /usr/local/cuda/bin: install the CUDA toolkit's compute-sanitizer and put it on PATH", ErrNoSanitizer)
		}
	}
	if err := os.MkdirAll(logs, 0o755); err != nil {
		return nil, fmt.Errorf("sanitizer logs folder: %w", err)
	}
	return &Sanitizer{Tool: tool, Exe: exe, Logs: logs}, nil
}

// Argv is the command line that runs argv under the sanitizer with its
// output in logPath. Its text goes to the log, never to the plugin's
// stdout (where go-plugin reads the handshake); API errors are left out
// (after a kernel's memory error every later call fails, and a plugin's
// probes fail on purpose); a process that never touches CUDA (a plugin
// asked only to describe itself) is no error.
func (s *Sanitizer) Argv(logPath string, argv []string) []string {
	args := []string{s.Exe, "--tool", s.Tool, "--log-file", strings.ReplaceAll(logPath, "%", "%%"),
		"--prefix", sanitizerPrefix, "--print-limit", "100", "--report-api-errors", "no", "--require-cuda-init", "no",
		"--target-processes", "all"}
	return append(append(args, "--"), argv...)
}

// sanitizerPrefix starts every line the sanitizer writes (its default).
const sanitizerPrefix = "========="

// logPath is a new log file for a process of the named plugin.
func (s *Sanitizer) logPath(name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	return filepath.Join(s.Logs, fmt.Sprintf("%s-%s-%d.log", safeFile(name), s.Tool, s.seq))
}

func safeFile(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, s)
}

// adopt keeps the findings of p's exited process until p asks for them.
func (s *Sanitizer) adopt(p *Plugin, fs []Finding) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range fs {
		s.orphans = append(s.orphans, owned{p, f})
	}
}

// claim removes and returns the kept findings of p's processes.
func (s *Sanitizer) claim(p *Plugin) []Finding {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Finding
	keep := s.orphans[:0]
	for _, o := range s.orphans {
		if o.p == p {
			out = append(out, o.f)
		} else {
			keep = append(keep, o)
		}
	}
	s.orphans = keep
	return out
}

// Orphans removes and returns every finding no case claimed: those a
// sanitizer wrote only as its process exited, after the last case.
func (s *Sanitizer) Orphans() []Finding {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Finding, len(s.orphans))
	for i, o := range s.orphans {
		out[i] = o.f
	}
	s.orphans = nil
	return out
}

// sanLog is one process's sanitizer log, read as it grows.
type sanLog struct {
	tool string
	path string
	off  int64
	rest string // the end of what was read: a record that may go on
}

// read returns the records completed since the last read; at the end
// (the process has exited) it returns the rest too.
func (l *sanLog) read(end bool) []Finding {
	f, err := os.Open(l.path)
	if err != nil {
		return nil // not written yet: the sanitizer creates it when it has something to say
	}
	defer f.Close()
	var b strings.Builder
	buf := make([]byte, 64<<10)
	for {
		n, rerr := f.ReadAt(buf, l.off)
		b.Write(buf[:n])
		l.off += int64(n)
		if rerr != nil || n == 0 {
			break
		}
	}
	text := l.rest + b.String()
	cut := completeUpTo(text)
	if end {
		cut = len(text)
	}
	l.rest = text[cut:]
	return ParseSanitizer(l.tool, text[:cut])
}

// completeUpTo is the length of text's complete records: up to the last
// record separator (a line of the prefix alone) or summary line.
func completeUpTo(text string) int {
	cut := 0
	for i := 0; i < len(text); {
		j := strings.IndexByte(text[i:], '\n')
		if j < 0 {
			break
		}
		line := strings.TrimSpace(strings.TrimLeft(text[i:i+j], "="))
		i += j + 1
		if line == "" || strings.Contains(line, "SUMMARY:") {
			cut = i
		}
	}
	return cut
}

// underSanitizer is cmd run under the sanitizer. A pinned binary the
// harness holds as a sealed image cannot be handed to the sanitizer by
// descriptor (it closes on exec), so the image the pin was checked
// against is copied into the run's private folder and run from there.
func (p *Plugin) underSanitizer(cmd *exec.Cmd, s *Sanitizer) (*exec.Cmd, error) {
	target := append([]string{cmd.Path}, cmd.Args[1:]...)
	if p.image != nil {
		exe, err := p.imageFile()
		if err != nil {
			return nil, fmt.Errorf("plugin %s under compute-sanitizer: %w", p.Name, err)
		}
		target[0] = exe
	}
	argv := s.Argv(p.san.path, target)
	c := exec.Command(argv[0], argv[1:]...)
	c.Dir = cmd.Dir
	return c, nil
}

// imageFile writes the held image to an executable file in the run
// directory, read-only, and returns its path.
func (p *Plugin) imageFile() (string, error) {
	if p.opts.Dir == nil {
		return "", errors.New("no run directory for the plugin's image")
	}
	f, err := os.CreateTemp(p.opts.Dir.Path, "plugin-image-*")
	if err != nil {
		return "", err
	}
	_, err = io.Copy(f, io.NewSectionReader(p.image, 0, 1<<62))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o500)
	}
	if err == nil && unix.Access(f.Name(), unix.X_OK) != nil {
		err = fmt.Errorf("%s is on a filesystem mounted noexec, where the pinned binary's checked copy cannot run: "+
			"set KVHARNESS_RUNTIME_DIR to a folder that allows running programs", p.opts.Dir.Path)
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}
