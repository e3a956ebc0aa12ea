package cuda

import (
	"bytes"
	"encoding/hex"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// Environment of the IPC child: the hex handle and the byte count to write.
const (
	envIPCHandle = "KVHARNESS_TEST_IPC_HANDLE"
	envIPCSize   = "KVHARNESS_TEST_IPC_SIZE"
)

func ipcPattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + 3)
	}
	return b
}

// TestIPC exports an allocation, lets a child process (this test binary run
// again) open it and write a pattern, and checks the parent sees it.
func TestIPC(t *testing.T) {
	d := openDevice(t)
	const n = 1 << 16
	p := alloc(t, d, n)
	must(t, d.Memset8(p, 0, n))
	if _, err := d.IpcHandle(p.Add(256)); err == nil {
		t.Error("IpcHandle of an interior pointer succeeded")
	}
	h, err := d.IpcHandle(p)
	must(t, err)

	cmd := exec.Command(os.Args[0], "-test.run=^TestIPCChild$", "-test.v")
	cmd.Env = append(os.Environ(), envIPCHandle+"="+hex.EncodeToString(h[:]), envIPCSize+"="+strconv.Itoa(n))
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("IPC child failed: %v\n%s", err, out)
	}
	t.Logf("child start + open + write + exit: %v", time.Since(start))
	if !bytes.Contains(out, []byte("--- PASS: TestIPCChild")) {
		t.Fatalf("IPC child did not run its test:\n%s", out)
	}
	got := make([]byte, n)
	must(t, d.DtoH(got, p))
	if !bytes.Equal(got, ipcPattern(n)) {
		t.Fatal("the parent does not see the child's write")
	}
}

// TestIPCChild is the child half of TestIPC; on its own it skips.
func TestIPCChild(t *testing.T) {
	hs := os.Getenv(envIPCHandle)
	if hs == "" {
		t.Skip("runs only as the child process of TestIPC")
	}
	n, err := strconv.Atoi(os.Getenv(envIPCSize))
	must(t, err)
	d := openDevice(t)
	p := openHandle(t, d, hs)
	must(t, d.HtoD(p, ipcPattern(n)))
	must(t, d.Sync())
	must(t, d.IpcClose(p))
}

// openHandle opens an IPC handle given in hex, as a child test receives it.
func openHandle(t *testing.T, d *Device, hs string) Ptr {
	t.Helper()
	raw, err := hex.DecodeString(hs)
	if err != nil || len(raw) != 64 {
		t.Fatalf("bad handle %q: %v", hs, err)
	}
	p, err := d.IpcOpen([64]byte(raw))
	must(t, err)
	return p
}
