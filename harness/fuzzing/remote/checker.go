package remote

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kvharness/kvharness/harness/internal/gobuild"
	"github.com/kvharness/kvharness/harness/protocol/doorbell"
)

// Checker is a running kvharness fuzz-check: a process and the doorbell
// in the memfd both map. It is started again after it dies.
type Checker struct {
	target, bin, spill string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	stderr *tail
	mem    []byte
	box    *doorbell.Box
}

// Start builds (or finds) the checker and starts it on target, ready for
// inputs.
func Start(target string) (*Checker, error) {
	bin, err := checkerBinary()
	if err != nil {
		return nil, err
	}
	spill, err := os.MkdirTemp("", "kvharness-fuzz-")
	if err != nil {
		return nil, fmt.Errorf("fuzz %s: a folder for long inputs: %w", target, err)
	}
	c := &Checker{target: target, bin: bin, spill: spill}
	if err := c.start(); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// checkerBinary is KVHARNESS_FUZZ_CHECKER, or kvharness built from the
// source tree the test runs in.
func checkerBinary() (string, error) {
	if p := os.Getenv(CheckerEnv); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%s=%s: %w; name a kvharness binary, or unset it to build one from the source tree", CheckerEnv, p, err)
		}
		return p, nil
	}
	root, ok := gobuild.SourceRoot()
	if !ok {
		return "", fmt.Errorf("the out-of-process fuzz lane builds kvharness from the source tree this test was built from, and found none (a -trimpath build records none); set %s to the tree, or %s to a kvharness binary", gobuild.SourceEnv, CheckerEnv)
	}
	bin, err := gobuild.Build(root, "./harness/cmd/kvharness", "kvharness")
	if err != nil {
		return "", fmt.Errorf("the out-of-process fuzz lane's checker: %w (or set %s to a kvharness binary)", err, CheckerEnv)
	}
	return bin, nil
}

// start launches the checker on a fresh doorbell and waits until it has
// opened the target.
func (c *Checker) start() error {
	fd, err := unix.MemfdCreate("kvharness-fuzz", unix.MFD_CLOEXEC)
	if err != nil {
		return fmt.Errorf("fuzz %s: memfd for the doorbell: %w", c.target, err)
	}
	file := os.NewFile(uintptr(fd), "kvharness-fuzz")
	defer file.Close() // the mapping and the child keep it
	if err := file.Truncate(doorbell.Size); err != nil {
		return fmt.Errorf("fuzz %s: size the doorbell: %w", c.target, err)
	}
	mem, err := unix.Mmap(fd, 0, doorbell.Size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("fuzz %s: map the doorbell: %w", c.target, err)
	}
	box, err := doorbell.Open(mem)
	if err != nil {
		unix.Munmap(mem)
		return err
	}
	cmd := exec.Command(c.bin, "fuzz-check", "--spill", c.spill, c.target)
	cmd.ExtraFiles = []*os.File{file} // fd 3
	c.stderr = &tail{max: 16 << 10}
	cmd.Stdout, cmd.Stderr = c.stderr, c.stderr
	if err := cmd.Start(); err != nil {
		unix.Munmap(mem)
		return fmt.Errorf("fuzz %s: start %s: %w", c.target, c.bin, err)
	}
	c.cmd, c.mem, c.box, c.exited = cmd, mem, box, make(chan struct{})
	go func() { cmd.Wait(); close(c.exited) }()
	code, msg, err := c.roundTrip([]byte{tagHello}, 10*time.Minute) // a first build of the plugin may take minutes
	if err == nil && code != codePass {
		c.stop() // a checker without its target answers no input
		err = fmt.Errorf("fuzz %s: %s", c.target, msg)
		if code == codeSkip {
			err = &SkipError{msg}
		}
	}
	return err
}

// Check has the checker check one input: its case's features (two bytes
// each), or the crasher's message. An error is the checker's own fault
// (it died); the next Check starts another.
func (c *Checker) Check(data []byte) (features []byte, failure string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cmd == nil {
		if err := c.start(); err != nil {
			return nil, "", err
		}
	}
	req := append([]byte{tagInput}, data...)
	if len(req) > doorbell.MaxRequest {
		path := filepath.Join(c.spill, "input")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return nil, "", fmt.Errorf("fuzz %s: spill a %d-byte input: %w", c.target, len(data), err)
		}
		req = append([]byte{tagFile}, path...)
	}
	code, msg, err := c.roundTrip(req, 0)
	if err != nil {
		return nil, "", err
	}
	switch code {
	case codePass:
		return []byte(msg), "", nil
	case codeFail:
		return nil, msg, nil
	case codeFailFile:
		long, err := os.ReadFile(msg)
		if err != nil {
			return nil, "", fmt.Errorf("fuzz %s: read the checker's message: %w", c.target, err)
		}
		return nil, string(long), nil
	}
	return nil, "", fmt.Errorf("fuzz %s: the checker answered code %d (%s) to an input", c.target, code, msg)
}

// roundTrip posts req and waits for the answer, for at most limit (0: as
// long as the checker lives). A checker that exits, or does not answer in
// time, is stopped, and its output makes the error.
func (c *Checker) roundTrip(req []byte, limit time.Duration) (uint32, string, error) {
	seq, err := c.box.Post(req)
	if err != nil {
		return 0, "", err
	}
	start := time.Now()
	for !c.box.Wait(seq, 50*time.Millisecond) {
		select {
		case <-c.exited:
			err := fmt.Errorf("fuzz %s: the checker (%s fuzz-check) exited: %v%s", c.target, c.bin, c.cmd.ProcessState, c.stderr.said())
			c.stop()
			return 0, "", err
		default:
		}
		if limit > 0 && time.Since(start) > limit {
			err := fmt.Errorf("fuzz %s: the checker (%s fuzz-check) did not answer in %v%s", c.target, c.bin, limit, c.stderr.said())
			c.stop()
			return 0, "", err
		}
	}
	code, msg, _ := c.box.Answer()
	return code, msg, nil
}

// stop ends the checker: asked to, then killed if it lingers.
func (c *Checker) stop() {
	if c.cmd == nil {
		return
	}
	c.box.Stop()
	select {
	case <-c.exited:
	case <-time.After(5 * time.Second):
		c.cmd.Process.Kill()
		<-c.exited
	}
	unix.Munmap(c.mem)
	c.cmd, c.box, c.mem = nil, nil, nil
}

// Close stops the checker and removes the spill folder.
func (c *Checker) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stop()
	os.RemoveAll(c.spill)
}

// tail keeps the last max bytes written to it: the checker's output, for
// the error when it dies.
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = t.buf[len(t.buf)-t.max:]
	}
	return len(p), nil
}

// said is the output so far, as the end of an error message.
func (t *tail) said() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s := bytes.TrimSpace(t.buf); len(s) > 0 {
		return "; it said:\n" + string(s)
	}
	return ""
}
