package sdk_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
	"github.com/kvharness/kvharness/harness/sdk"
)

// hostArena is a shared-memory arena as the harness makes one: a file the
// test maps and the plugin maps again at Attach.
type hostArena struct {
	path string
	mem  []byte
}

func newHostArena(t testing.TB, size int) *hostArena {
	t.Helper()
	path := filepath.Join(t.TempDir(), "arena")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(int64(size)); err != nil {
		t.Fatal(err)
	}
	mem, err := unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Munmap(mem) })
	return &hostArena{path: path, mem: mem}
}

func (h *hostArena) desc() *kvpb.Arena {
	return &kvpb.Arena{Backend: kvpb.Backend_BACKEND_SHM, Path: h.path, Size: uint64(len(h.mem))}
}

// served is a plugin's services in process, behind the clients the
// harness calls them with.
type served struct {
	kvpb.PluginClient
	kvpb.StoreClient
	kvpb.ReadClient
	kvpb.TransferClient
	kvpb.LoadClient
	kvpb.PDAsyncClient
}

func serve(p sdk.Plugin) served {
	c := plugin.InProcess(p.Name, sdk.Services(p)).Conn()
	return served{kvpb.NewPluginClient(c), kvpb.NewStoreClient(c), kvpb.NewReadClient(c),
		kvpb.NewTransferClient(c), kvpb.NewLoadClient(c), kvpb.NewPDAsyncClient(c)}
}

// storeOn runs one store on a plugin process, as the harness calls it.
func storeOn(ctx context.Context, p *plugin.Plugin, req *kvpb.StoreRequest) error {
	_, err := plugin.Call(ctx, p, "Store", kvpb.NewStoreClient(p.Conn()).Store, req)
	return err
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
