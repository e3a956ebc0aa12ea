package kernel

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/kvharness/kvharness/harness/protocol/fdpass"
)

// The hostile variants do what a plugin written to harm other jobs would:
// reach for arenas that are not its own, leave a process behind that
// escapes its process group, plant a file among the harness's results.
// Each does it once, at its first store, and otherwise stores correctly;
// what it managed is written to $KVHARNESS_FAULTY_REPORT when set, for the
// tests that prove the harness stops it.

// ReportEnv names the file a hostile variant reports what it managed in.
const ReportEnv = "KVHARNESS_FAULTY_REPORT"

var hostileOnce sync.Once

// inherited are the descriptors the process was started with: what the
// harness passed it (scan-fds reports them).
var inherited []string

// noteInherited lists the descriptors this process holds without
// close-on-exec as Main begins: those it inherited (whatever the Go
// runtime and this process open is close-on-exec).
func noteInherited() {
	fds, _ := os.ReadDir("/proc/self/fd")
	for _, e := range fds {
		var fd int
		fmt.Sscan(e.Name(), &fd)
		if flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err == nil && flags&unix.FD_CLOEXEC == 0 {
			inherited = append(inherited, e.Name())
		}
	}
}

func hostile(variant string) {
	hostileOnce.Do(func() {
		switch variant {
		case "scan-fds":
			report(scanArenas())
		case "setsid-child":
			report(escape())
		case "plant-file":
			report(plant())
		}
	})
}

func report(line string) {
	if path := os.Getenv(ReportEnv); path != "" {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o666)
		if err == nil {
			fmt.Fprintln(f, line)
			f.Close()
		}
	}
}

// scanArenas tries every way a same-user process has to another job's
// arena: each descriptor of the harness through /proc/PPID/fd, and each
// arena socket of the run directory. It counts the arena files it could
// open that this process was not given (its own are mapped already).
func scanArenas() string {
	own := ownArenas()
	foreign, tried := map[uint64]bool{}, 0
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", os.Getppid()))
	for _, e := range fds {
		tried++
		if ino, ok := openArena(fmt.Sprintf("/proc/%d/fd/%s", os.Getppid(), e.Name())); ok && !own[ino] {
			foreign[ino] = true
		}
	}
	socks, _ := filepath.Glob(filepath.Join(filepath.Dir(os.Getenv("PLUGIN_UNIX_SOCKET_DIR")), "fd-*", "s"))
	received := 0
	for _, s := range socks {
		tried++
		fd, rerr := fdpass.Receive(context.Background(), s)
		if rerr != nil {
			continue
		}
		var st unix.Stat_t
		unix.Fstat(fd, &st)
		unix.Close(fd)
		if own[st.Ino] {
			received++
		} else {
			foreign[st.Ino] = true
		}
	}
	return fmt.Sprintf("scan-fds: opened %d arenas not its own (tried %d descriptors and sockets; /proc/%d/fd: %v; received its own %d); inherited fds %s",
		len(foreign), tried, os.Getppid(), errText(err), received, strings.Join(inherited, ","))
}

func errText(err error) string {
	if err == nil {
		return "listed"
	}
	return err.Error()
}

// openArena opens path read-write and maps it, as an arena is used; it
// returns the file's inode when that worked for a shared-memory arena.
func openArena(path string) (uint64, bool) {
	target, _ := os.Readlink(path)
	if !strings.Contains(target, "arena-") {
		return 0, false
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	m, err := unix.Mmap(int(f.Fd()), 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return 0, false
	}
	unix.Munmap(m)
	var st unix.Stat_t
	unix.Fstat(int(f.Fd()), &st)
	return st.Ino, true
}

// ownArenas are the inodes of the arena files this process has mapped.
func ownArenas() map[uint64]bool {
	own := map[uint64]bool{}
	data, _ := os.ReadFile("/proc/self/maps")
	s := bufio.NewScanner(bytes.NewReader(data))
	for s.Scan() {
		f := strings.Fields(s.Text())
		if len(f) >= 6 && strings.Contains(f[5], "arena-") {
			var ino uint64
			fmt.Sscan(f[4], &ino)
			own[ino] = true
		}
	}
	return own
}

// escape starts a child in a session of its own, out of the plugin's
// process group, to outlive the run.
func escape() string {
	cmd := exec.Command("sleep", "600")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return "setsid-child: " + err.Error()
	}
	go cmd.Wait()
	return fmt.Sprintf("setsid-child: started %d in session %d", cmd.Process.Pid, cmd.Process.Pid)
}

// plant writes a file into the harness's results folder, found on the
// harness's command line (--results) or where it writes by default.
func plant() string {
	dir := "kvharness-results"
	args, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", os.Getppid()))
	parts := strings.Split(string(args), "\x00")
	for i, a := range parts {
		if a == "--results" && i+1 < len(parts) {
			dir = parts[i+1]
		} else if v, ok := strings.CutPrefix(a, "--results="); ok {
			dir = v
		}
	}
	os.MkdirAll(dir, 0o755)
	path := filepath.Join(dir, "faulty-bf16-none-padding-00000000.json")
	err := os.WriteFile(path, []byte(`{"version": 1, "note": "not written by kvharness"}`+"\n"), 0o644)
	return fmt.Sprintf("plant-file: %s: %v", path, err)
}
