package fdpass

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// helperEnv makes the test binary a process that receives from the socket
// it names once a line arrives on its stdin, and prints what happened.
const helperEnv = "FDPASS_TEST_RECEIVE"

func TestHelperReceive(t *testing.T) {
	path := os.Getenv(helperEnv)
	if path == "" {
		t.Skip("run by TestOnlyGrantedPluginsReceive")
	}
	bufio.NewReader(os.Stdin).ReadString('\n')
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	fd, err := Receive(ctx, path)
	if err != nil {
		fmt.Println("refused:", err)
		return
	}
	syscall.Close(fd)
	fmt.Println("received")
}

// TestOnlyGrantedPluginsReceive: another process of the same user is
// refused an arena's descriptor unless it runs in the process group of a
// plugin the harness started and the arena was granted to that plugin;
// forgetting the plugin (its process exited) takes the grant back.
func TestOnlyGrantedPluginsReceive(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "arena")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := serve(t, func() (int, error) { return syscall.Dup(int(f.Fd())) })
	ask := func(register, grant bool) string {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperReceive$")
		cmd.Env = append(os.Environ(), helperEnv+"="+s.Path)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // a group of its own, as every plugin runs in
		in, _ := cmd.StdinPipe()
		var out strings.Builder
		cmd.Stdout = &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		pgid := cmd.Process.Pid
		if register {
			PluginStarted(pgid)
			defer PluginExited(pgid)
		}
		if grant {
			Grant(s.Path, pgid)
		}
		fmt.Fprintln(in, "go")
		cmd.Wait()
		return out.String()
	}
	for _, tc := range []struct {
		register, grant bool
		want            string
	}{
		{false, false, "is no plugin this harness started"},
		{false, true, "is no plugin this harness started"},
		{true, false, "this arena was not given to"},
		{true, true, "received"},
	} {
		if got := ask(tc.register, tc.grant); !strings.Contains(got, tc.want) {
			t.Errorf("plugin %v, granted %v: %q, want %q", tc.register, tc.grant, got, tc.want)
		}
	}
	s.mu.Lock()
	left := len(s.granted)
	s.mu.Unlock()
	if left != 0 {
		t.Errorf("%d grants outlived their plugins", left)
	}
}
