package kernel

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/workload"
	"github.com/kvharness/kvharness/internal/testtier"
)

// TestCUDAKernelOnTheCPU compiles recipestore.cu with g++ against a small
// CUDA shim (testdata/cuda_shim.h) and runs it over a whole grid on the
// CPU, for every variant on every layout it changes (the full suite; the
// default recipe on every layout outside it), comparing the arena byte
// for byte with the Go kernel's. It checks the CUDA kernel's
// addressing, scale rules and rounding without a GPU; only the hardware's
// e4m3 conversion is stood in for. Without g++ it skips: the GPU run
// (harness/sdk's TestGPUMatchesCPU) compares the real thing.
func TestCUDAKernelOnTheCPU(t *testing.T) {
	cxx, err := exec.LookPath("g++")
	if err != nil {
		t.Skip("no g++: the CUDA kernel is compared with the Go kernel on the GPU (go test ./harness/sdk -run GPU on a CUDA machine)")
	}
	shim, _ := os.ReadFile("testdata/cuda_shim.h")
	driver, _ := os.ReadFile("testdata/cuda_driver.cc")
	program := string(shim) + "\n" + strings.Replace(source, "#include <cuda_fp8.h>", "", 1) + "\n" + string(driver)
	dir := t.TempDir()
	src := filepath.Join(dir, "recipestore.cc")
	if err := os.WriteFile(src, []byte(program), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := map[string][]string{"": layouts, "torch": layouts, "int32-slots": {"fp8-rows"}, "eps-undeclared": {"fp8-paged"},
		"ties-away": {"dsv4-main", "fp8-rows"}, "scale-partial-row": {"fp8-rows", "dsv4-main"}, "bf16-quotient": {"fp8-paged"},
		"ue8m0-round-down": {"dsv4-main"}}
	if !testtier.Full() { // the quick and fast loops: the default recipe on every layout (a g++ each)
		cases = map[string][]string{"": layouts}
	}
	for variant, names := range cases {
		for _, name := range names {
			t.Run(fmt.Sprintf("%s/%s", variant, name), func(t *testing.T) {
				t.Parallel() // g++ is the slow part: one per core
				compareOnCPU(t, cxx, src, t.TempDir(), variant, name)
			})
		}
	}
}

func compareOnCPU(t *testing.T, cxx, src, dir, variant, name string) {
	rows := testRows(150, dims(name), 11)
	for i := range 10 { // raw bit patterns: NaN and infinities take their own paths
		rows = append(rows, workload.Row{Kind: workload.RowGarbage, Seed: 12<<32 | uint64(i)}.Data(dims(name)))
	}
	want := newRig(t, name, rows)
	want.store(t, variant)
	got := newRig(t, name, rows)
	opts, err := options(variant, got.pool.Layout)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, strings.NewReplacer("/", "_", "-", "_").Replace(variant+"_"+name))
	args := append([]string{"-std=c++17", "-O0", "-ffp-contract=off", "-o", bin}, opts...)
	if out, err := exec.Command(cxx, append(args, src)...).CombinedOutput(); err != nil {
		t.Fatalf("g++ %s: %v\n%s", strings.Join(opts, " "), err, out)
	}
	var rowBytes, locBytes bytes.Buffer
	for _, r := range rows {
		binary.Write(&rowBytes, binary.LittleEndian, r)
	}
	for _, s := range got.slots {
		if slotBitsOf(variant) == 32 {
			binary.Write(&locBytes, binary.LittleEndian, int32(s))
		} else {
			binary.Write(&locBytes, binary.LittleEndian, s)
		}
	}
	files := map[string][]byte{"arena": got.arena, "rows": rowBytes.Bytes(), "loc": locBytes.Bytes()}
	for f, b := range files {
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	n := fmt.Sprint(len(rows) - 7) // the last 7 rows are padding: never stored
	want = newRig(t, name, rows)
	want.storeN(t, variant, len(rows)-7)
	cmd := exec.Command(bin, filepath.Join(dir, "arena"), fmt.Sprint(got.pool.Base), filepath.Join(dir, "rows"),
		filepath.Join(dir, "loc"), fmt.Sprint(len(rows)), n, fmt.Sprint(got.pool.Slots))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	arena, _ := os.ReadFile(filepath.Join(dir, "arena"))
	if i := oracle.FirstDiff(arena, want.arena); i >= 0 {
		t.Fatalf("byte %d (pool offset %d): CUDA kernel %#02x, Go kernel %#02x", i, i-got.pool.Base, arena[i], want.arena[i])
	}
	if bytes.Equal(arena, got.arena) {
		t.Fatal("the CUDA kernel wrote nothing")
	}
}
