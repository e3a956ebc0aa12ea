package plugin_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvharness/kvharness/harness/internal/plugintest"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/internal/testtier"
)

// TestPinnedBinarySwaps: while a pinned plugin starts again and again, its
// path is swapped by rename, as fast as the machine allows, between the
// pinned binary and another plugin. Every start must run the pinned
// binary or be refused with ErrChecksum: never the other one. What runs
// is the image that was hashed, not whatever the path names at exec.
func TestPinnedBinarySwaps(t *testing.T) {
	testtier.FullOnly(t, "starts 100 plugin processes")
	pinned := plugintest.Resolve(t, "fusedstore")
	other := plugintest.Resolve(t, "bf16scatter")
	dir := t.TempDir()
	path := filepath.Join(dir, "myplugin")
	good, bad := filepath.Join(dir, "good"), filepath.Join(dir, "bad")
	copyFile(t, pinned, good)
	copyFile(t, other, bad)
	copyFile(t, pinned, path)
	sum, err := plugin.FileSHA256(path)
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var swaps atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() { swapLoop(t, path, good, bad, stop, &swaps) })
	rd := plugintest.Dir(t)
	ran, refused := 0, 0
	const tries = 100
	for range tries {
		p, err := plugin.Start(context.Background(), "myplugin", path, plugin.Options{Dir: rd, SHA256: sum})
		if errors.Is(err, plugin.ErrChecksum) {
			refused++
			continue
		}
		if err != nil {
			t.Fatalf("start: %v", err)
		}
		d, err := p.Describe(context.Background(), plugin.Query{HeadDim: 128, PageSize: 64})
		p.Close()
		if err != nil {
			t.Fatalf("describe: %v", err)
		}
		if d.Name != "fusedstore" {
			t.Fatalf("a pinned start ran %s: the swapped-in binary", d.Name)
		}
		ran++
	}
	close(stop)
	wg.Wait()
	t.Logf("%d starts: %d ran the pinned binary, %d refused a swapped file, 0 ran another; %d swaps meanwhile", tries, ran, refused, swaps.Load())
	if refused == 0 || ran == 0 {
		t.Errorf("the swaps never raced the starts (%d ran, %d refused): the test proved nothing", ran, refused)
	}
}

// swapLoop renames the good and the bad binary over path in turn until
// stop.
func swapLoop(t *testing.T, path, good, bad string, stop chan struct{}, swaps *atomic.Int64) {
	tmp := path + ".swap"
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		default:
		}
		src := good
		if i%2 == 1 {
			src = bad
		}
		if err := os.Link(src, tmp); err != nil {
			t.Error(err)
			return
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Error(err)
			return
		}
		swaps.Add(1)
		time.Sleep(50 * time.Microsecond) // leave the starts a core
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o755); err != nil {
		t.Fatal(err)
	}
}
