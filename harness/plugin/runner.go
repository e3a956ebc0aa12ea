package plugin

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-plugin/runner"
	"github.com/kvharness/kvharness/harness/protocol/fdpass"
	"github.com/kvharness/kvharness/harness/rundir"
)

// groupRunner runs a plugin in its own process group. Its stdout and stderr
// are pipes we own, so the process can be reaped as soon as it exits and
// its status is known at once, while go-plugin keeps reading the pipes.
type groupRunner struct {
	cmd    *exec.Cmd
	dir    *rundir.Dir
	stdout *os.File
	stderr *os.File

	// stderrDone is called once the plugin's stderr has been read to
	// its end.
	stderrDone func()
	// dropSanitizer keeps a sanitizer's lines out of the plugin's stdout,
	// where go-plugin reads the handshake.
	dropSanitizer bool

	exited chan struct{}
	mu     sync.Mutex
	pid    int  // once Start has started the process
	killed bool // the harness killed it (Kill): its death is no news
	state  *os.ProcessState
	werr   error
}

var _ runner.Runner = (*groupRunner)(nil)

func newGroupRunner(cmd *exec.Cmd, dir *rundir.Dir) *groupRunner {
	return &groupRunner{cmd: cmd, dir: dir, exited: make(chan struct{})}
}

func (r *groupRunner) Start(context.Context) error {
	outR, outW, err := os.Pipe()
	if err != nil {
		return err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return err
	}
	r.cmd.Stdout, r.cmd.Stderr = outW, errW
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	forking.Lock() // until it is noted as started: see reaper.go
	err = startOnSpawner(r.cmd)
	if err == nil {
		noteStarted(r.cmd.Process.Pid)
	}
	forking.Unlock()
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return fmt.Errorf("start %s: %w", r.cmd.Path, err)
	}
	r.stdout, r.stderr = outR, errR
	r.mu.Lock()
	r.pid = r.cmd.Process.Pid
	r.mu.Unlock()
	fdpass.PluginStarted(r.pid) // its process group: Setpgid made it the pid
	if r.dir != nil {
		r.dir.RecordGroup(r.cmd.Process.Pid)
	}
	go r.reap()
	return nil
}

func (r *groupRunner) reap() {
	err := r.cmd.Wait()
	noteExited(r.cmd.Process.Pid)
	fdpass.PluginExited(r.cmd.Process.Pid)
	r.mu.Lock()
	r.state, r.werr = r.cmd.ProcessState, err
	r.mu.Unlock()
	close(r.exited)
}

// exitDetail describes how the process ended, or "" while it runs.
func (r *groupRunner) exitDetail() string {
	select {
	case <-r.exited:
	default:
		return ""
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.state == nil {
		return fmt.Sprintf("could not wait for the process: %v", r.werr)
	}
	if ws, ok := r.state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return fmt.Sprintf("process killed by signal %s", ws.Signal())
	}
	return fmt.Sprintf("process exited with status %d", r.state.ExitCode())
}

func (r *groupRunner) Wait(ctx context.Context) error {
	select {
	case <-r.exited:
	case <-ctx.Done():
		return ctx.Err()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.werr
}

// Kill kills the whole process group: a plugin's children die with it.
func (r *groupRunner) Kill(context.Context) error {
	if r.cmd.Process == nil {
		return nil
	}
	r.mu.Lock()
	r.killed = true
	r.mu.Unlock()
	err := syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// killOrphans kills what the process left behind outside its group, once
// it has exited (before, its children are not yet orphans).
func (r *groupRunner) killOrphans() {
	select {
	case <-r.exited:
	case <-time.After(stopGrace):
	}
	r.mu.Lock()
	pid := r.pid
	r.mu.Unlock()
	if r.dir != nil && pid > 0 {
		KillOrphansOf(r.dir.Path, pid)
	}
}

// killStarted is Kill for any goroutine while go-plugin may still be
// starting the process: it kills the group once Start has started it.
func (r *groupRunner) killStarted() {
	r.mu.Lock()
	pid := r.pid
	r.mu.Unlock()
	if pid > 0 {
		r.mu.Lock()
		r.killed = true
		r.mu.Unlock()
		syscall.Kill(-pid, syscall.SIGKILL)
	}
}

// killedByHarness reports whether the harness killed the process.
func (r *groupRunner) killedByHarness() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.killed
}

func (r *groupRunner) Stdout() io.ReadCloser {
	if r.dropSanitizer {
		return &dropLines{r: bufio.NewReader(r.stdout), c: r.stdout, prefix: sanitizerPrefix}
	}
	return r.stdout
}
func (r *groupRunner) Stderr() io.ReadCloser { return eofReader{r.stderr, r.stderrDone} }
func (r *groupRunner) Name() string          { return r.cmd.Path }

func (r *groupRunner) ID() string {
	if r.cmd.Process == nil {
		return ""
	}
	return strconv.Itoa(r.cmd.Process.Pid)
}

func (r *groupRunner) Diagnose(context.Context) string {
	if d := r.exitDetail(); d != "" {
		return "the plugin " + d
	}
	return "the plugin is running but did not print a go-plugin handshake line on stdout; is it a kvharness plugin built with the same protocol version?"
}

func (r *groupRunner) PluginToHost(n, a string) (string, string, error) { return n, a, nil }
func (r *groupRunner) HostToPlugin(n, a string) (string, string, error) { return n, a, nil }

// eofReader calls done when its reader reaches its end.
type eofReader struct {
	io.ReadCloser
	done func()
}

func (e eofReader) Read(p []byte) (int, error) {
	n, err := e.ReadCloser.Read(p)
	if err != nil && e.done != nil {
		e.done()
	}
	return n, err
}

// dropLines reads a stream without its lines that start with prefix.
type dropLines struct {
	r      *bufio.Reader
	c      io.Closer
	prefix string
	buf    []byte
}

func (d *dropLines) Read(p []byte) (int, error) {
	for len(d.buf) == 0 {
		line, err := d.r.ReadBytes('\n')
		if !bytes.HasPrefix(line, []byte(d.prefix)) {
			d.buf = line
		}
		if err != nil && len(d.buf) == 0 {
			return 0, err
		}
		if err != nil {
			break
		}
	}
	n := copy(p, d.buf)
	d.buf = d.buf[n:]
	return n, nil
}

func (d *dropLines) Close() error { return d.c.Close() }
