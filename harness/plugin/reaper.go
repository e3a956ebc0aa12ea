package plugin

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Nothing a plugin starts outlives the run. Each plugin runs in a process
// group of its own, killed whole when the plugin stops; a descendant that
// leaves the group (setpgid, setsid) would escape that kill and, once its
// parent died, be adopted by init and run on. The harness is therefore the
// child subreaper of everything below it (PR_SET_CHILD_SUBREAPER): such an
// orphan is adopted by the harness instead, and killed.

var guarded sync.Once

// Guard makes this process what a harness must be before its first plugin
// starts, once: the child subreaper of its descendants (see above), and
// not dumpable, so that no other process of the same user (a plugin among
// them) can open its descriptors through /proc/PID/fd or read its memory
// through /proc/PID/mem; each plugin receives its own arenas' descriptors
// over a socket that hands them to that plugin alone (package fdpass).
// Root, and any process with CAP_SYS_PTRACE, can still reach everything
// (docs/trust.md). Starting a plugin calls it; the kvharness command calls
// it first thing.
func Guard() {
	guarded.Do(func() {
		unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
		unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
		closeOnExec()
	})
}

// closeOnExec marks every descriptor above stderr close-on-exec. Go opens
// its own so; what this process inherited from its parent without the
// flag (a shell's, a CI runner's) would otherwise pass to every plugin,
// since exec closes only close-on-exec descriptors.
func closeOnExec() {
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	for _, e := range fds {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			unix.CloseOnExec(fd)
		}
	}
}

// child is a child process of this one, as /proc shows it.
type child struct {
	pid, pgid, sid int
}

// children lists this process's live child processes (zombies aside).
func children() []child {
	var out []child
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", os.Getpid()))
	for _, f := range tasks {
		data, _ := os.ReadFile(f)
		for _, field := range strings.Fields(string(data)) {
			pid, _ := strconv.Atoi(field)
			if c, ok := stat(pid); ok {
				out = append(out, c)
			}
		}
	}
	return out
}

// stat reads a process's group and session from /proc/PID/stat; false for
// a process gone or a zombie.
func stat(pid int) (child, bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	i := bytes.LastIndexByte(data, ')')
	if err != nil || i < 0 {
		return child{}, false
	}
	f := strings.Fields(string(data[i+1:])) // state ppid pgrp session ...
	if len(f) < 4 || f[0] == "Z" || f[0] == "X" {
		return child{}, false
	}
	pgid, _ := strconv.Atoi(f[2])
	sid, _ := strconv.Atoi(f[3])
	return child{pid: pid, pgid: pgid, sid: sid}, true
}

// started are the plugin processes this process started and has not yet
// seen exit: its children that are not orphans. forking is held while a
// plugin is started and noted, and while orphans are chosen: a process
// forked but not yet noted carries a run's marker too, and must never be
// taken for an orphan (its exec.Cmd waits for it).
var started = struct {
	sync.Mutex
	pids map[int]bool
}{pids: map[int]bool{}}

var forking sync.Mutex

func noteStarted(pid int) { started.Lock(); started.pids[pid] = true; started.Unlock() }
func noteExited(pid int)  { started.Lock(); delete(started.pids, pid); started.Unlock() }

func isStarted(pid int) bool {
	started.Lock()
	defer started.Unlock()
	return started.pids[pid]
}

// KillOrphansOf kills, and reaps, the orphans of the plugins run in the
// run directory dir: children of this process that it did not start,
// that carry dir's marker in their environment or sit in process group
// pgid (0: none). Other children (a go build, a probe of python) are not
// touched.
func KillOrphansOf(dir string, pgid int) int {
	marker := []byte("PLUGIN_UNIX_SOCKET_DIR=" + dir + "/")
	return killWhile(func(c child) bool {
		return !isStarted(c.pid) && (pgid > 0 && c.pgid == pgid || environHolds(c.pid, marker))
	})
}

// KillChildren kills every child process of this one, and what they leave
// behind as they die (adopted in turn by this subreaper): what a harness
// about to exit does, so that nothing it or its plugins started outlives
// it. It returns how many processes it killed.
func KillChildren() int {
	return killWhile(func(child) bool { return true })
}

// killWhile kills the children that match, and their groups when those
// are not this process's, until none is left or a second has passed: a
// killed process's own children are adopted by this one as it dies.
func killWhile(match func(child) bool) int {
	killed := 0
	self := unix.Getpgrp()
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) {
		var orphans []int
		forking.Lock()
		victims := 0
		for _, c := range children() {
			if !match(c) {
				continue
			}
			victims++
			if c.pgid != self && c.pgid > 1 {
				unix.Kill(-c.pgid, unix.SIGKILL)
			}
			if unix.Kill(c.pid, unix.SIGKILL) == nil {
				killed++
			}
			if !isStarted(c.pid) { // an exec.Cmd waits for its own; an orphan is this reaper's to wait for
				orphans = append(orphans, c.pid)
			}
		}
		forking.Unlock()
		for _, pid := range orphans {
			var ws unix.WaitStatus
			unix.Wait4(pid, &ws, 0, nil)
		}
		if victims == 0 {
			return killed
		}
	}
	return killed
}

func environHolds(pid int, marker []byte) bool {
	env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	return err == nil && bytes.Contains(env, marker)
}
