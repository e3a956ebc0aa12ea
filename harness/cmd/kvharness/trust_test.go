package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kvharness/kvharness/internal/testtier"
)

// userRun is a built kvharness run as an ordinary user in a folder of its
// own: as root (a container, a CI machine), the processes run as nobody,
// since root reaches every process of the machine whatever the harness
// does (docs/trust.md). Without a Go toolchain on its PATH the binary
// serves its bundled plugins itself.
type userRun struct {
	bin, dir string
	tag      string // in every process's environment, to find what is left
	asRoot   bool   // run as root when the test is root (what root reaches)
}

func newUserRun(t *testing.T) *userRun {
	t.Helper()
	dir, err := os.MkdirTemp("", "kvh-trust")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o777)
	os.Mkdir(filepath.Join(dir, "rt"), 0o777)
	os.Chmod(filepath.Join(dir, "rt"), 0o777)
	bin := filepath.Join(dir, "kvharness")
	data, err := os.ReadFile(buildCLI(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return &userRun{bin: bin, dir: dir, tag: fmt.Sprintf("KVHARNESS_TEST_TAG=%d-%d", os.Getpid(), time.Now().UnixNano())}
}

// command is the CLI with args, as the user, its environment bare.
func (u *userRun) command(args ...string) *exec.Cmd {
	cmd := exec.Command(u.bin, args...)
	cmd.Dir = u.dir
	cmd.Env = []string{"HOME=" + u.dir, "PATH=/usr/bin:/bin", "KVHARNESS_RUNTIME_DIR=" + filepath.Join(u.dir, "rt"),
		"KVHARNESS_FAULTY_REPORT=" + filepath.Join(u.dir, "report.txt"), u.tag}
	if os.Geteuid() == 0 && !u.asRoot {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	}
	return cmd
}

func (u *userRun) run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	cmd := u.command(args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Run()
	return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
}

// report is what the faulty plugin's hostile variants said they managed,
// and clears it.
func (u *userRun) report(t *testing.T) string {
	path := filepath.Join(u.dir, "report.txt")
	data, _ := os.ReadFile(path)
	os.Remove(path)
	return string(data)
}

// left lists the processes still alive that carry the run's tag.
func (u *userRun) left() []string {
	var out []string
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", p.Name(), "environ"))
		stat, _ := os.ReadFile(filepath.Join("/proc", p.Name(), "stat"))
		if err == nil && bytes.Contains(env, []byte(u.tag)) && !bytes.Contains(stat, []byte(") Z ")) {
			cmd, _ := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
			out = append(out, fmt.Sprintf("%d %s", pid, bytes.ReplaceAll(cmd, []byte{0}, []byte{' '})))
		}
	}
	return out
}

// TestHostilePlugins runs the faulty plugin's hostile variants under the
// built CLI as an ordinary user: a plugin that scans the harness's
// descriptors and the run directory's sockets opens no arena but its own
// (four jobs, four arenas); a plugin's child that leaves its session is
// killed, also when stdout is closed early (kvharness ... | head -c 10);
// a file planted in --results is named and fails the run; a plugin killed
// with -9 from outside is a fault in the report, not a silent restart.
func TestHostilePlugins(t *testing.T) {
	testtier.FullOnly(t, "builds kvharness and runs hostile plugins under it as an ordinary user")
	u := newUserRun(t)
	base := []string{"check", "--plugin", "faulty", "--backend", "cpu", "--layout", "bf16", "--cases", "20"}
	with := func(extra ...string) []string { return append(append([]string{}, base...), extra...) }

	t.Run("scan-fds", func(t *testing.T) {
		code, out, errs := u.run(t, with("--variant", "scan-fds", "--jobs", "4", "--results", filepath.Join(u.dir, "res"))...)
		rep := u.report(t)
		t.Logf("exit %d\n%s%s\nplugin report:\n%s", code, out, errs, rep)
		lines := strings.Split(strings.TrimSpace(rep), "\n")
		if code != exitPass || len(lines) != 4 {
			t.Fatalf("exit %d, %d plugin reports; want 0 and one per job", code, len(lines))
		}
		for _, l := range lines {
			if !strings.Contains(l, "opened 0 arenas not its own") || !strings.Contains(l, "received its own 1") {
				t.Errorf("a plugin reached what is not its own, or could not receive its own arena: %s", l)
			}
			if !strings.HasSuffix(l, "inherited fds 0,1,2") {
				t.Errorf("a plugin started with descriptors beyond stdin, stdout and stderr: %s", l)
			}
		}
	})
	// The control: as root, who passes the checks a non-dumpable process
	// relies on (docs/trust.md), the same plugin reaches other jobs'
	// arenas, so the scan above could find them had the harness left them
	// open to its user.
	t.Run("scan-fds as root", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("needs root: the control shows what root reaches")
		}
		root := *u
		root.asRoot = true
		code, out, errs := root.run(t, with("--variant", "scan-fds", "--jobs", "4", "--results", filepath.Join(u.dir, "res-root"))...)
		rep := u.report(t)
		t.Logf("exit %d\n%s%s\nplugin report:\n%s", code, out, errs, rep)
		reached := 0
		for _, l := range strings.Split(strings.TrimSpace(rep), "\n") {
			var n int
			if _, err := fmt.Sscanf(l, "scan-fds: opened %d arenas not its own", &n); err == nil && n > 0 {
				reached++
			}
		}
		if reached == 0 {
			t.Errorf("as root no plugin reached another job's arena: the scan cannot tell a closed harness from a blind scan")
		}
	})
	t.Run("setsid-child", func(t *testing.T) {
		code, out, errs := u.run(t, with("--variant", "setsid-child", "--padding", "none", "--results", filepath.Join(u.dir, "res"))...)
		rep := u.report(t)
		t.Logf("exit %d\n%s%s\nplugin report: %s", code, out, errs, rep)
		if !strings.Contains(rep, "setsid-child: started") {
			t.Fatalf("the plugin started no child: %s", rep)
		}
		if left := u.left(); len(left) > 0 {
			t.Errorf("processes left after the run: %v", left)
		}
	})
	t.Run("stdout closed early", func(t *testing.T) {
		cmd := u.command(with("--variant", "setsid-child", "--cases", "2000", "--results", filepath.Join(u.dir, "res"))...)
		pipe, _ := cmd.StdoutPipe()
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		io.ReadFull(pipe, make([]byte, 10)) // head -c 10
		pipe.Close()
		cmd.Wait()
		t.Logf("exit %d: %s", cmd.ProcessState.ExitCode(), stderr.String())
		// The report is written at the end: into the pipe's buffer when the
		// run ends before the reader closes (exit 0), else refused (exit 2,
		// said on stderr). Either way nothing is left running.
		if code := cmd.ProcessState.ExitCode(); code != exitPass && (code != exitError || !strings.Contains(stderr.String(), "writing to stdout failed")) {
			t.Errorf("exit %d, stderr %q; want 0, or 2 and a line saying stdout failed", code, stderr.String())
		}
		u.report(t)
		if left := u.left(); len(left) > 0 {
			t.Errorf("processes left after the run: %v", left)
		}
	})
	t.Run("plant-file", func(t *testing.T) {
		res := filepath.Join(u.dir, "planted")
		code, out, errs := u.run(t, with("--variant", "plant-file", "--padding", "none", "--results", res)...)
		t.Logf("exit %d\n%s%s\nplugin report: %s", code, out, errs, u.report(t))
		if code != exitError || !strings.Contains(errs, "did not write: "+res+"/faulty-bf16-none-padding-00000000.json") {
			t.Errorf("exit %d; want 2 and the planted file named", code)
		}
	})
	t.Run("kill -9", func(t *testing.T) {
		cmd := u.command("check", "--plugin", "fusedstore", "--backend", "cpu", "--layout", "bf16", "--padding", "none",
			"--cases", "2000", "--results", filepath.Join(u.dir, "res"))
		pipe, _ := cmd.StdoutPipe()
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(time.Minute); !attached(cmd.Process.Pid) && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(500 * time.Millisecond) // cases are running
		killed := 0
		for _, c := range childrenOf(cmd.Process.Pid) {
			if syscall.Kill(c, syscall.SIGKILL) == nil {
				killed++
			}
		}
		rest, _ := io.ReadAll(pipe)
		cmd.Wait()
		out := string(rest)
		t.Logf("killed %d plugin processes; exit %d\n%s%s", killed, cmd.ProcessState.ExitCode(), out, stderr.String())
		if killed == 0 {
			t.Fatal("no plugin process to kill")
		}
		if code := cmd.ProcessState.ExitCode(); code != exitError || !strings.Contains(stderr.String(), "crash during") || strings.Contains(out, "faults 0") {
			t.Errorf("exit %d; want 2 with the crash reported as a fault", code)
		}
	})
}

// attached reports whether a child of pid has mapped an arena.
func attached(pid int) bool {
	for _, c := range childrenOf(pid) {
		if maps, _ := os.ReadFile(fmt.Sprintf("/proc/%d/maps", c)); bytes.Contains(maps, []byte("/arena-")) {
			return true
		}
	}
	return false
}

// childrenOf lists a process's children.
func childrenOf(pid int) []int {
	var out []int
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, f := range tasks {
		data, _ := os.ReadFile(f)
		for _, field := range strings.Fields(string(data)) {
			if c, err := strconv.Atoi(field); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}
