// Package python holds the end-to-end tests of the Python plugin SDK
// (kvharness_sdk) and its example plugins: real Python processes driven by
// the harness's own machinery, on the CPU backend. The GPU side is
// gpu_test.sh.
//
// The tests skip, saying why, when no python that imports grpc, protobuf
// and numpy is found (see plugin.Python); .ci/run installs Debian's.
package python

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"math"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/arena/shm"
	"github.com/kvharness/kvharness/harness/kernels/store"
	"github.com/kvharness/kvharness/harness/kind"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/pool"
	"github.com/kvharness/kvharness/harness/property"
	"github.com/kvharness/kvharness/harness/protocol"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
	"github.com/kvharness/kvharness/harness/rundir"
	"github.com/kvharness/kvharness/harness/target"
	"github.com/kvharness/kvharness/harness/workload"
	"github.com/kvharness/kvharness/internal/testtier"
)

// noErr stops the test on err, at its caller's line: the error handling
// of a step whose error says all there is to say.
func noErr(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// python returns the interpreter the harness would run Python plugins
// with, or skips the test.
func python(t testing.TB) string {
	t.Helper()
	py, err := plugin.Python("python3")
	if err != nil {
		t.Skipf("no usable python for the Python SDK, skipping: %v", err)
	}
	return py
}

func runDir(t testing.TB) *rundir.Dir {
	t.Helper()
	dir, err := rundir.Open()
	noErr(t, err)
	t.Cleanup(func() { dir.Close() })
	return dir
}

// start starts a plugin from a --plugin argument (a manifest, a command
// line or a bundled Go plugin's name), as the CLI does.
func start(t testing.TB, dir *rundir.Dir, arg, variant string) *plugin.Plugin {
	t.Helper()
	spec, err := plugin.ResolveSpec(arg)
	noErr(t, err)
	p, err := plugin.StartSpec(context.Background(), spec, plugin.Options{Dir: dir, Variant: variant, NoMTLS: noOpenSSL(t)})
	noErr(t, err)
	t.Cleanup(p.Close)
	return p
}

// noOpenSSL reports whether the openssl command, which the SDK's AutoMTLS
// needs, is missing; the tests then run without mutual TLS.
func noOpenSSL(t testing.TB) bool {
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Logf("no openssl command: running Python plugins without AutoMTLS")
		return true
	}
	return false
}

func abs(t testing.TB, path string) string {
	t.Helper()
	p, err := filepath.Abs(path)
	noErr(t, err)
	return p
}

// sharedPools plans pools of specs with stagingBytes of staging after
// them and maps them into a shared-memory arena, closed with the test.
func sharedPools(t testing.TB, dir *rundir.Dir, specs []pool.Spec, stagingBytes int) (pool.Geometry, *shm.Memory) {
	t.Helper()
	g, err := pool.Plan(specs, stagingBytes)
	noErr(t, err)
	mem, err := shm.New(dir, g.Size)
	noErr(t, err)
	t.Cleanup(func() { mem.Close() })
	return g, mem
}

// attachShared attaches p to mem's pools g, declaring recipe.
func attachShared(t testing.TB, p *plugin.Plugin, mem *shm.Memory, g pool.Geometry, recipe string) {
	t.Helper()
	if _, err := p.Attach(context.Background(), p, target.Request(arena.One(arena.HostShared, mem), g, recipe)); err != nil {
		t.Fatal(err)
	}
}

func bf16(t testing.TB) *layout.Layout {
	t.Helper()
	l, err := layout.Builtin("bf16", 128, 64)
	noErr(t, err)
	return l
}

// manifests are the shipped plugins and test plugins, with the kernels
// each describes.
var manifests = []struct {
	dir     string
	kernels []protocol.Kernel
}{
	{"torchscatter", []protocol.Kernel{"store"}},
	{"tritonstore", []protocol.Kernel{"store"}},
	{"flashfp8store", []protocol.Kernel{"store"}},
	{"indexerstore", []protocol.Kernel{"store"}},
	{"dsv4store", []protocol.Kernel{"store"}},
	{"topkread", []protocol.Kernel{"read"}},
	{"pagetransfer", []protocol.Kernel{"transfer"}},
	{filepath.Join("testdata", "graphonly"), []protocol.Kernel{"store"}},
}

// The shipped manifests resolve to a python that runs the SDK, turn
// AutoMTLS off (pip's grpcio cannot take go-plugin's P-521 client
// certificate; see README.md), and describe the plugin they name.
func TestManifests(t *testing.T) {
	slowPython(t)
	for _, m := range manifests {
		manifest := filepath.Join(m.dir, "kvharness-plugin.json")
		spec, err := plugin.ResolveSpec(manifest)
		noErr(t, err)
		if !spec.NoMTLS || filepath.Base(spec.Argv[1]) != "plugin.py" {
			t.Errorf("%s: spec %+v", m.dir, spec)
		}
		p := start(t, runDir(t), manifest, "")
		d, err := p.Describe(context.Background(), plugin.Query{HeadDim: 128, PageSize: 64})
		if err != nil || d.Name != spec.Name || !slices.Equal(d.Kernels, m.kernels) || !d.BenchRotation {
			t.Errorf("%s: describe %v, %v; want kernels %v and bench_rotation", m.dir, d, err, m.kernels)
		}
	}
}

// AutoMTLS end to end: the SDK's openssl-made certificate in the
// handshake, the harness's client certificate required. It needs a grpcio
// on the system OpenSSL (Debian's); on BoringSSL (pip's wheels) the
// handshake fails as documented, and the test says so and skips.
func TestAutoMTLS(t *testing.T) {
	t.Parallel()
	py := python(t)
	if noOpenSSL(t) {
		t.Skip("no openssl command: the SDK cannot make its AutoMTLS certificate")
	}
	spec, err := plugin.ResolveSpec(py + " " + abs(t, filepath.Join("torchscatter", "plugin.py")))
	noErr(t, err)
	p, err := plugin.StartSpec(context.Background(), spec, plugin.Options{Dir: runDir(t)})
	if f, ok := plugin.AsFault(err); ok && strings.Contains(f.Stderr, "PEER_DID_NOT_RETURN_A_CERTIFICATE") {
		t.Skipf("this grpcio (BoringSSL) refuses go-plugin's P-521 client certificate, as documented: %v", err)
	}
	noErr(t, err)
	defer p.Close()
	if d, err := p.Describe(context.Background(), plugin.Query{HeadDim: 128, PageSize: 64}); err != nil || d.Name != "torchscatter" {
		t.Errorf("describe over mutual TLS: %v, %v", d, err)
	}
}

// suite runs the store properties for one padding convention, as
// `kvharness check --backend cpu --padding P` does.
func suite(t *testing.T, p *plugin.Plugin, dir *rundir.Dir, pad store.Padding) property.Verdict[*store.Case, *store.Result] {
	t.Helper()
	s := store.Suite(&kind.Session{Plugin: p, Dir: dir}, kind.Params{Layouts: []*layout.Layout{bf16(t)},
		Cases: 60, Seed: 1, Setup: kind.Setup{Slots: 1024, MaxCapacity: 64, Backend: arena.SHM{}}}, []store.Padding{pad})
	vs, err := s.Run(context.Background())
	if err != nil {
		t.Fatalf("%s: %v", pad, err)
	}
	return vs[0]
}

// torchscatter, the incident's `pool[loc] = rows` in Python, is caught
// under every padding convention and passes without padding: the verdicts
// of its Go twin, bf16scatter.
func TestTorchscatterCaughtUnderPadding(t *testing.T) {
	t.Parallel()
	python(t)
	dir := runDir(t)
	py := start(t, dir, filepath.Join("torchscatter", "kvharness-plugin.json"), "")
	gopl := start(t, dir, "bf16scatter", "")
	for _, pad := range store.Paddings {
		v, twin := suite(t, py, dir, pad), suite(t, gopl, dir, pad)
		caught := v.Outcome.Failure != nil
		if caught != (pad != store.PadNone) || len(v.Outcome.Faults) > 0 {
			t.Errorf("%s: caught=%v faults=%v; want caught only under padding, no faults", pad, caught, v.Outcome.Faults)
		}
		if caught != (twin.Outcome.Failure != nil) {
			t.Errorf("%s: torchscatter caught=%v, bf16scatter caught=%v", pad, caught, twin.Outcome.Failure != nil)
		}
		if caught {
			f := v.Outcome.Failure
			t.Logf("%s: caught at case %d, property %s (bf16scatter: %s), minimal case %v",
				pad, v.Outcome.Cases, f.Property, twin.Outcome.Failure.Property, f.Case)
		}
	}
	if h, err := store.StoreBatch(context.Background(), py, nil); err != nil || h <= 0 {
		t.Errorf("StoreBatch of no calls: %v; the plugin reported handler time %v, want > 0", err, h)
	}
}

// The CLI's exit codes for a Python plugin: 1 when caught, 0 when clean.
func TestCheckCommand(t *testing.T) {
	t.Parallel()
	python(t)
	testtier.FullOnly(t, "builds the kvharness command and runs it over Python plugins")
	bin := kvharnessBinary(t)
	manifest := abs(t, filepath.Join("torchscatter", "kvharness-plugin.json"))
	for _, tc := range []struct {
		padding string
		code    int
		want    string
	}{{"all", 1, `FAIL torchscatter`}, {"none", 0, `bf16\s+(D=\d+ P=\d+\s+)?none\s+40\s+ok`}} {
		args := []string{"check", "--plugin", manifest, "--backend", "cpu", "--cases", "40", "--padding", tc.padding, "--results", t.TempDir()}
		if noOpenSSL(t) {
			args = append(args, "--no-mtls")
		}
		cmd := exec.Command(bin, args...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := cmd.ProcessState.ExitCode()
		if code != tc.code || !regexp.MustCompile(tc.want).MatchString(stdout.String()) {
			t.Errorf("check --padding %s: exit %d (%v), want %d with %q\n%s%s", tc.padding, code, err, tc.code, tc.want, &stdout, &stderr)
		}
	}
}

var built struct {
	once sync.Once
	dir  string
	err  error
	out  []byte
}

// kvharnessBinary builds the kvharness command once per test run.
func kvharnessBinary(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		built.dir, built.err = os.MkdirTemp("", "kvh-cli-")
		if built.err != nil {
			return
		}
		build := exec.Command("go", "build", "-o", filepath.Join(built.dir, "kvharness"), "./harness/cmd/kvharness")
		build.Dir = abs(t, filepath.Join("..", ".."))
		built.out, built.err = build.CombinedOutput()
	})
	if built.err != nil {
		t.Fatalf("build kvharness: %v\n%s", built.err, built.out)
	}
	return filepath.Join(built.dir, "kvharness")
}

// quick skips t under -short: the quick loop keeps the SDK's own unit
// tests, a Python store caught under padding, the handshake and shutdown,
// and a kernel's errors as refusals; the kinds' suites over Python plugins
// run in go test ./....
func quick(t *testing.T) {
	t.Helper()
	testtier.SkipShort(t, "more Python plugin processes")
}

// rowCases is the cases a suite row over a Python plugin runs: full in the
// full suite, fast outside it (each case is a round trip to a Python
// process, and the fast loop runs many such rows).
func rowCases(full, fast int) int {
	if testtier.Full() {
		return full
	}
	return fast
}

// pythonMutant skips the run of a Python plugin's mutant outside the full
// suite: the fast loop keeps the plugin's control, which runs the same
// SDK path (and TestPythonFaults and TestExampleUndeclaredEpsIsNamed
// select variants through it), and kills the mutant's bug class in the Go
// plugin's mutant test named by twin.
func pythonMutant(t *testing.T, twin string) {
	t.Helper()
	testtier.FullOnly(t, "a Python mutant's run (the fast loop runs the control here and kills the bug class in "+twin+")")
}

// slowPython starts most tests here: skipped under -short (each starts
// Python plugin processes), run in parallel, and skipped where no usable
// python is. It returns the python.
func slowPython(t *testing.T) string {
	t.Helper()
	quick(t)
	t.Parallel()
	return python(t)
}

// TestMain removes the kvharness binary the tests built.
func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// kvharness mutants runs the Python read and transfer plugins' controls
// and mutants like the bundled ones: controls pass, mutants die.
func TestMutantsCommand(t *testing.T) {
	t.Parallel()
	python(t)
	testtier.FullOnly(t, "builds the kvharness command and runs it over Python plugins")
	cmd := exec.Command(kvharnessBinary(t), "mutants", "--plugin", filepath.Join("topkread", "kvharness-plugin.json"),
		"--plugin", filepath.Join("pagetransfer", "kvharness-plugin.json"), "--backend", "cpu", "--cases", "40", "--no-times")
	if noOpenSSL(t) {
		cmd.Args = append(cmd.Args, "--no-mtls")
	}
	out, err := cmd.CombinedOutput()
	if exitCode(err) != 0 || !strings.Contains(string(out), "2 of 2 mutants killed; 2 controls passed") {
		t.Errorf("kvharness mutants: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "kvharness-plugin") || !strings.Contains(string(out), "\ntopkread ") {
		t.Errorf("kvharness mutants names the rows after the manifest's file, not the plugins' own names:\n%s", out)
	}
}

// kvharness mutants runs the example stores too, dsv4store at its fixed
// head dim without being told it: the shipped stores and the controls
// pass, the undeclared eps dies, by the recipe and bit-exact alike.
func TestMutantsExamples(t *testing.T) {
	t.Parallel()
	python(t)
	testtier.FullOnly(t, "builds the kvharness command and runs it over Python plugins")
	for _, value := range []string{"recipe", "exact"} {
		cmd := exec.Command(kvharnessBinary(t), "mutants", "--plugin", filepath.Join("indexerstore", "kvharness-plugin.json"),
			"--plugin", filepath.Join("dsv4store", "kvharness-plugin.json"), "--backend", "cpu", "--cases", "40", "--no-times",
			"--value", value)
		if noOpenSSL(t) {
			cmd.Args = append(cmd.Args, "--no-mtls")
		}
		out, err := cmd.CombinedOutput()
		if exitCode(err) != 0 || !strings.Contains(string(out), "2 of 2 mutants killed; 4 controls passed") ||
			!strings.Contains(string(out), "dsv4-main/") {
			t.Errorf("kvharness mutants --value %s: %v\n%s", value, err, out)
		}
		t.Logf("--value %s:\n%s", value, out)
	}
}

func storeCase(p store.Padding, valid int, loc ...int64) *store.Case {
	c := &store.Case{Padding: p, Valid: valid, Loc: loc}
	for i := range loc {
		c.Rows = append(c.Rows, workload.Row{Kind: workload.RowNormal, Seed: uint64(i + 1)})
	}
	return c
}

// A Python kernel that raises is the plugin's refusal (an "error" fault
// carrying the message and the traceback) and the plugin lives on; one
// that exits or dies of a signal is a crash. None is a harness crash or an
// invariant violation. A property run survives refusals until MaxFaults,
// and (in the full suite) confirms and shrinks a crash as a finding.
func TestPythonFaults(t *testing.T) {
	py := slowPython(t)
	script := abs(t, filepath.Join("testdata", "faulty", "plugin.py"))
	for _, tc := range []struct {
		variant string
		kind    plugin.FaultKind
		detail  string
	}{
		{"raise", plugin.Refused, "RuntimeError: pyfaulty: deliberate failure storing 2 rows"},
		{"exit", plugin.Crash, "exited with status 3"},
		{"segfault", plugin.Crash, "signal"},
	} {
		t.Run(tc.variant, func(t *testing.T) {
			t.Parallel()
			dir := runDir(t)
			p := start(t, dir, py+" "+script, tc.variant)
			tg, err := store.Open(context.Background(), p, dir, store.Config{Backend: arena.SHM{}, Variant: tc.variant, Layout: bf16(t), Slots: 256, MaxCapacity: 8, Seed: 1})
			noErr(t, err)
			_, err = tg.Check(context.Background(), storeCase(store.PadCount, 1, 3, 9))
			f, ok := plugin.AsFault(err)
			if !ok || f.Kind != tc.kind || !strings.Contains(f.Detail, tc.detail) {
				t.Errorf("%s: err = %v; want a %s fault with %q", tc.variant, err, tc.kind, tc.detail)
				return
			}
			if tc.kind == plugin.Refused {
				if f.Code != codes.Aborted || !strings.Contains(f.Stderr, "Traceback") {
					t.Errorf("raise: code %v, stderr %q; want ABORTED and the traceback", f.Code, f.Stderr)
				}
				if _, err := p.Describe(context.Background(), plugin.Query{HeadDim: 128, PageSize: 64}); err != nil {
					t.Errorf("raise: the plugin did not survive its kernel's exception: %v", err)
				}
			}
			// A property run survives a refusal, restarts the plugin and
			// stops after MaxFaults of them: the CLI's exit status 2. A crash
			// while running a case is the kernel's failure: confirmed and
			// shrunk like a violation, no fault.
			tg.Close(context.Background())
			t.Run("suite", func(t *testing.T) {
				if tc.kind == plugin.Crash {
					testtier.FullOnly(t, "a crash's confirmation and shrinking, a Python process started for each (the fast loop classifies "+
						"the crash above, and harness/kernels/store's TestCrashIsAFinding confirms and shrinks one)")
				}
				if err := p.Restart(context.Background()); err != nil {
					t.Fatal(err)
				}
				s := store.Suite(&kind.Session{Plugin: p, Dir: dir}, kind.Params{Variant: tc.variant, Layouts: []*layout.Layout{bf16(t)},
					Cases: 5, Seed: 1, Setup: kind.Setup{Slots: 256, MaxCapacity: 8, Backend: arena.SHM{}}, MaxFaults: 2}, []store.Padding{store.PadNone})
				vs, runErr := s.Run(context.Background())
				if len(vs) != 1 {
					t.Errorf("%s: suite: err %v, verdicts %+v; want one", tc.variant, runErr, vs)
					return
				}
				o := vs[0].Outcome
				switch {
				case tc.kind == plugin.Refused && (!property.IsFault(runErr) || len(o.Faults) == 0 || o.Failure != nil):
					t.Errorf("%s: suite: err %v, outcome %+v; want survived faults, then a fault stop", tc.variant, runErr, o)
				case tc.kind == plugin.Crash && (runErr != nil || o.Failure == nil || o.Failure.Property != oracle.Crash || o.Failure.Flaky):
					t.Errorf("%s: suite: err %v, outcome %+v; want a confirmed crash failure", tc.variant, runErr, o)
				}
			})
		})
	}
}

// The handshake and go-plugin's services, spoken to directly: refused
// without the cookie, `1|2|unix|<socket>|grpc` with it, health SERVING for
// "plugin", and Shutdown makes the process exit 0 on its own.
func TestHandshakeAndShutdown(t *testing.T) {
	t.Parallel()
	py := python(t)
	script := abs(t, filepath.Join("torchscatter", "plugin.py"))
	out, err := exec.Command(py, script).CombinedOutput()
	if code := exitCode(err); code != 1 || !strings.Contains(string(out), "is a kvharness plugin") {
		t.Errorf("run by hand: exit %d, output %q; want 1 and how to run it", code, out)
	}

	sockets, err := os.MkdirTemp("", "kvh")
	noErr(t, err)
	defer os.RemoveAll(sockets)
	cmd := exec.Command(py, script)
	cmd.Env = append(os.Environ(), protocol.Handshake.MagicCookieKey+"="+protocol.Handshake.MagicCookieValue,
		"PLUGIN_UNIX_SOCKET_DIR="+sockets, "PLUGIN_CLIENT_CERT=")
	stdout, _ := cmd.StdoutPipe()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	line := make(chan string, 1)
	go func() {
		s := bufio.NewScanner(stdout)
		s.Scan()
		line <- s.Text()
	}()
	var hs string
	select {
	case hs = <-line:
	case <-time.After(20 * time.Second):
		t.Fatalf("no handshake in 20 s; stderr:\n%s", &stderr)
	}
	parts := strings.Split(hs, "|")
	if len(parts) != 5 || parts[0] != "1" || parts[1] != strconv.Itoa(protocol.Version) || parts[2] != "unix" || parts[4] != "grpc" ||
		filepath.Dir(parts[3]) != sockets {
		t.Fatalf("handshake %q; want 1|%d|unix|%s/...|grpc", hs, protocol.Version, sockets)
	}
	conn, err := grpc.NewClient("unix://"+parts[3], grpc.WithTransportCredentials(insecure.NewCredentials()))
	noErr(t, err)
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h, err := grpc_health_v1.NewHealthClient(conn).Check(ctx, &grpc_health_v1.HealthCheckRequest{Service: "plugin"})
	if err != nil || h.Status != grpc_health_v1.HealthCheckResponse_SERVING {
		t.Errorf("health: %v, %v", h, err)
	}
	if err := conn.Invoke(ctx, "/plugin.GRPCController/Shutdown", &emptypb.Empty{}, &emptypb.Empty{}); err != nil {
		t.Errorf("shutdown: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("after Shutdown the plugin exited with %v; stderr:\n%s", err, &stderr)
		}
	case <-time.After(10 * time.Second):
		t.Errorf("the plugin did not exit within 10 s of Shutdown")
	}
	if _, err := os.Stat(parts[3]); !os.IsNotExist(err) {
		t.Errorf("socket %s left behind", parts[3])
	}
}

func exitCode(err error) int {
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// The Python SDK validates requests as the Go SDK does: every request
// below gets the same status code from torchscatter (Python) and
// bf16scatter (Go), and the same message but for the plugin's name.
func TestValidationMatchesGoSDK(t *testing.T) {
	slowPython(t)
	dir := runDir(t)
	l := bf16(t)
	g, mem := sharedPools(t, dir, []pool.Spec{{Name: "case", Layout: l, Slots: 256}}, 64*l.RowBytes()+8*64)
	good := target.Request(arena.One(arena.HostShared, mem), g, "")
	rows, loc := uint64(g.Staging.Off), uint64(g.Staging.Off+64*l.RowBytes())
	storeReq := func(pool, capacity, valid uint32, rows, loc uint64) *kvpb.StoreRequest {
		return &kvpb.StoreRequest{Pool: pool, Capacity: capacity, Valid: valid, Padding: kvpb.Padding_PADDING_COUNT,
			RowsOffset: rows, LocOffset: loc}
	}
	attach := func(edit func(*kvpb.AttachRequest)) func(*plugin.Plugin) error {
		return func(p *plugin.Plugin) error {
			req := target.Request(arena.One(arena.HostShared, mem), g, "")
			edit(req)
			_, err := p.Attach(context.Background(), p, req)
			return err
		}
	}
	doStore := func(r ...*kvpb.StoreRequest) func(*plugin.Plugin) error {
		return func(p *plugin.Plugin) error { _, err := store.StoreBatch(context.Background(), p, r); return err }
	}
	bench := func(r *kvpb.BenchRequest) func(*plugin.Plugin) error {
		return func(p *plugin.Plugin) error { _, err := p.Bench(context.Background(), r); return err }
	}
	benchStore := storeReq(0, 4, 4, rows, loc)
	steps := []struct {
		name string
		do   func(*plugin.Plugin) error
	}{
		{"describe unknown variant", func(p *plugin.Plugin) error {
			_, err := p.Describe(context.Background(), plugin.Query{Variant: "nope", HeadDim: 128, PageSize: 64})
			return err
		}},
		{"store before attach", doStore(storeReq(0, 1, 1, rows, loc))},
		{"bench before attach", bench(&kvpb.BenchRequest{Store: benchStore, Iterations: 1})},
		{"attach unknown variant", attach(func(r *kvpb.AttachRequest) { r.Variant = "nope" })},
		{"attach no backend", attach(func(r *kvpb.AttachRequest) { r.Arena.Backend = kvpb.Backend_BACKEND_UNSPECIFIED })},
		{"attach short ipc handle", attach(func(r *kvpb.AttachRequest) {
			r.Arena.Backend, r.Arena.IpcHandle = kvpb.Backend_BACKEND_CUDA, make([]byte, 10)
		})},
		{"attach pool outside arena", attach(func(r *kvpb.AttachRequest) { r.Pools[0].Pool.Offset = r.Arena.Size })},
		{"attach no staging", attach(func(r *kvpb.AttachRequest) { r.Staging = nil })},
		{"attach staging over pool", attach(func(r *kvpb.AttachRequest) {
			r.Staging = &kvpb.Window{Offset: r.Pools[0].Pool.Offset, Size: r.Staging.Size}
		})},
		{"attach missing file", attach(func(r *kvpb.AttachRequest) { r.Arena.Path = "/nonexistent/arena" })},
		{"attach", func(p *plugin.Plugin) error { _, err := p.Attach(context.Background(), p, good); return err }},
		{"store pool past the end", doStore(storeReq(3, 1, 1, rows, loc))},
		{"store capacity 0", doStore(storeReq(0, 0, 0, rows, loc))},
		{"store valid > capacity", doStore(storeReq(0, 2, 3, rows, loc))},
		{"store rows outside staging", doStore(storeReq(0, 2, 2, uint64(g.Staging.Off-256), loc))},
		{"store rows misaligned", doStore(storeReq(0, 2, 2, rows+1, loc))},
		{"store loc misaligned", doStore(storeReq(0, 2, 2, rows, loc+4))},
		{"store loc past staging", doStore(storeReq(0, 2, 2, rows, uint64(g.Staging.End()-8)))},
		{"batch, second call bad", doStore(storeReq(0, 1, 1, rows, loc), storeReq(0, 1, 1, rows, loc+1))},
		{"store", doStore(storeReq(0, 4, 4, rows, loc))},
		{"bench iterations 0", bench(&kvpb.BenchRequest{Store: benchStore})},
		{"bench nothing", bench(&kvpb.BenchRequest{Iterations: 1})},
		{"bench a huge copy", bench(&kvpb.BenchRequest{Copy: true, CopyBytes: 17 << 30, Iterations: 1})},
		{"bench bad store", bench(&kvpb.BenchRequest{Store: storeReq(0, 0, 0, rows, loc), Iterations: 1})},
		{"bench per-launch", bench(&kvpb.BenchRequest{Store: benchStore, Warmup: 2, Iterations: 5})},
		{"bench batched cold", bench(&kvpb.BenchRequest{Store: benchStore, Iterations: 3, Mode: kvpb.BenchMode_BENCH_BATCHED, Batch: 4, Cold: true, FlushBytes: 1 << 20})},
		{"bench huge iterations", bench(&kvpb.BenchRequest{Store: benchStore, Iterations: 1 << 30})},
		{"bench huge batch", bench(&kvpb.BenchRequest{Store: benchStore, Iterations: 1, Mode: kvpb.BenchMode_BENCH_BATCHED, Batch: 1 << 30})},
		{"bench batched", bench(&kvpb.BenchRequest{Store: benchStore, Iterations: 3, Mode: kvpb.BenchMode_BENCH_BATCHED, Batch: 4})},
		{"bench per-launch cold", bench(&kvpb.BenchRequest{Store: benchStore, Iterations: 3, Cold: true, FlushBytes: 1 << 20})},
		{"bench copy", bench(&kvpb.BenchRequest{Store: benchStore, Copy: true, Iterations: 3})},
		{"bench empty", bench(&kvpb.BenchRequest{Empty: true, Iterations: 3})},
		{"detach", func(p *plugin.Plugin) error { return p.Detach(context.Background()) }},
	}
	py := start(t, dir, filepath.Join("torchscatter", "kvharness-plugin.json"), "")
	gopl := start(t, dir, "bf16scatter", "")
	for _, s := range steps {
		pc, pm := outcome(s.do(py), "torchscatter")
		gc, gm := outcome(s.do(gopl), "bf16scatter")
		// The Go SDK wraps a status error in fmt.Errorf, which repeats
		// the code inside the message; the Python SDK does not.
		gm = strings.ReplaceAll(gm, "rpc error: code = InvalidArgument desc = ", "")
		switch {
		case pc != gc:
			t.Errorf("%s: Python %v %q, Go %v %q", s.name, pc, pm, gc, gm)
		case pm != gm && !strings.HasPrefix(pm, "window {"): // Go prints the window with %v
			t.Errorf("%s: messages differ:\n  Python %q\n  Go     %q", s.name, pm, gm)
		default:
			t.Logf("%-28s %v %s", s.name, pc, pm)
		}
	}
	// Rotations: the Python SDK takes them as the Go SDK does, and refuses
	// the same bad ones with the same words.
	rotation := func(r ...*kvpb.StoreRequest) func(*plugin.Plugin) error {
		return bench(&kvpb.BenchRequest{Store: benchStore, Iterations: 2, Rotation: r})
	}
	other := storeReq(0, 4, 3, rows, loc)
	for _, p := range []*plugin.Plugin{py, gopl} {
		if _, err := p.Attach(context.Background(), p, good); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range []struct {
		name string
		do   func(*plugin.Plugin) error
	}{
		{"rotation", rotation(storeReq(0, 4, 4, rows+256, loc), storeReq(0, 4, 4, rows, loc+64))},
		{"rotation of another call", rotation(other)},
		{"rotation too long", rotation(slices.Repeat([]*kvpb.StoreRequest{benchStore}, 64)...)},
		{"rotation without a store", bench(&kvpb.BenchRequest{Empty: true, Iterations: 1, Rotation: []*kvpb.StoreRequest{benchStore}})},
		{"rotating copy", bench(&kvpb.BenchRequest{Store: benchStore, Copy: true, Iterations: 2, Rotation: []*kvpb.StoreRequest{benchStore}})},
		{"rotating huge copy", bench(&kvpb.BenchRequest{Store: benchStore, Copy: true, CopyBytes: 8 << 30, Iterations: 1,
			Rotation: []*kvpb.StoreRequest{benchStore, benchStore}})},
	} {
		pc, pm := outcome(s.do(py), "torchscatter")
		gc, gm := outcome(s.do(gopl), "bf16scatter")
		if pc != gc || pm != gm {
			t.Errorf("%s: Python %v %q, Go %v %q", s.name, pc, pm, gc, gm)
		} else {
			t.Logf("%-28s %v %s", s.name, pc, pm)
		}
	}
}

// outcome is a call's status code and message, the plugin's name masked.
func outcome(err error, name string) (codes.Code, string) {
	if err == nil {
		return codes.OK, ""
	}
	f, ok := plugin.AsFault(err)
	if !ok {
		return codes.Unknown, err.Error()
	}
	return f.Code, strings.ReplaceAll(f.Detail, name, "NAME")
}

// Bench on the CPU answers positive samples on the monotonic clock in
// every mode.
func TestHostBench(t *testing.T) {
	slowPython(t)
	dir := runDir(t)
	p := start(t, dir, filepath.Join("torchscatter", "kvharness-plugin.json"), "")
	tg, err := store.Open(context.Background(), p, dir, store.Config{Backend: arena.SHM{}, Layout: bf16(t), Slots: 1024, MaxCapacity: 64, Seed: 1})
	noErr(t, err)
	defer tg.Close(context.Background())
	st := &kvpb.StoreRequest{Capacity: 64, Valid: 64, RowsOffset: uint64(tg.Pools.Staging.Off),
		LocOffset: uint64(tg.Pools.Staging.Off + 64*256)}
	for name, req := range map[string]*kvpb.BenchRequest{
		"per-launch": {Warmup: 3, Iterations: 20},
		"batched":    {Iterations: 5, Mode: kvpb.BenchMode_BENCH_BATCHED},
		"cold":       {Iterations: 3, Cold: true, FlushBytes: 4 << 20},
		"copy":       {Iterations: 5, Copy: true},
		"empty":      {Iterations: 5, Empty: true},
	} {
		req.Store = st
		resp, err := p.Bench(context.Background(), req)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(resp.Ns) != int(req.Iterations) || resp.Clock != "monotonic" || resp.Device != "cpu" {
			t.Errorf("%s: %d samples on %s/%s", name, len(resp.Ns), resp.Clock, resp.Device)
		}
		for _, ns := range resp.Ns {
			if ns < 1 {
				t.Errorf("%s: sample %v ns", name, ns)
			}
		}
	}
}

// kvharness_sdk.fp8, the reference tritonstore is tested against on the
// GPU, is the harness's quantizer bit for bit: e4m3 codes of every bf16
// value and of random float32 patterns, and whole fp8-rows records
// (codes and scale) of rows with NaN, infinities, subnormals and zeros.
func TestFP8ReferenceMatchesHarness(t *testing.T) {
	py := slowPython(t)
	rng := rand.New(rand.NewSource(1))
	var xs []float32
	for b := range 1 << 16 {
		xs = append(xs, layout.BF16ToFloat32(uint16(b)))
	}
	for range 1 << 16 {
		xs = append(xs, math.Float32frombits(rng.Uint32()))
	}
	const rows, d = 512, 128
	rowBits := make([]uint16, rows*d)
	for i := range rowBits {
		switch r := i / d; {
		case r%8 == 0:
			rowBits[i] = uint16(rng.Uint32()) // anything: NaN, Inf, subnormal
		case r%8 == 1:
			rowBits[i] = 0
		default:
			rowBits[i] = layout.Float32ToBF16(float32(rng.NormFloat64() * math.Ldexp(1, rng.Intn(40)-20)))
		}
	}
	tmp := t.TempDir()
	write := func(name string, data any) {
		var b bytes.Buffer
		binary.Write(&b, binary.LittleEndian, data)
		os.WriteFile(filepath.Join(tmp, name), b.Bytes(), 0o644)
	}
	write("x.f32", xs)
	write("rows.u16", rowBits)
	prog := `import sys, numpy as np
sys.path.insert(0, sys.argv[1]); d = sys.argv[2]
from kvharness_sdk import fp8
fp8.e4m3_rne(np.fromfile(d + "/x.f32", np.float32)).tofile(d + "/codes.u8")
codes, scales = fp8.quantize(np.fromfile(d + "/rows.u16", np.uint16).reshape(-1, 128))
codes.tofile(d + "/rowcodes.u8"); scales.tofile(d + "/scales.f32")
codes, exps = fp8.quantize_ue8m0(np.fromfile(d + "/rows.u16", np.uint16).reshape(-1, 512)[:, :448], 64)
codes.tofile(d + "/tilecodes.u8"); exps.tofile(d + "/exps.u8")`
	cmd := exec.Command(py, "-B", "-c", prog, abs(t, "."), tmp)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("python: %v\n%s", err, out)
	}
	codes, _ := os.ReadFile(filepath.Join(tmp, "codes.u8"))
	bad := 0
	for i, x := range xs {
		if want := layout.EncodeE4M3(x); i >= len(codes) || codes[i] != want {
			if bad++; bad <= 5 {
				t.Errorf("e4m3(%v = %#08x): python %#02x, harness %#02x", x, math.Float32bits(x), at(codes, i), want)
			}
		}
	}
	l, err := layout.Builtin("fp8-rows", d, 64)
	noErr(t, err)
	rowCodes, _ := os.ReadFile(filepath.Join(tmp, "rowcodes.u8"))
	scales, _ := os.ReadFile(filepath.Join(tmp, "scales.f32"))
	for r := range rows {
		rec := l.Encode(rowBits[r*d : (r+1)*d])[0]
		got := append(append([]byte(nil), rowCodes[r*d:(r+1)*d]...), scales[4*r:4*r+4]...)
		if !bytes.Equal(got, rec) {
			if bad++; bad <= 5 {
				t.Errorf("row %d: python record %x\nharness %x", r, got, rec)
			}
		}
	}
	// dsv4-main: e4m3 codes in tiles of 64 with ue8m0 (power-of-two)
	// scales, the same rows read as 512-element rows.
	ds, err := layout.Builtin("dsv4-main", 512, 64)
	noErr(t, err)
	tileCodes, _ := os.ReadFile(filepath.Join(tmp, "tilecodes.u8"))
	exps, _ := os.ReadFile(filepath.Join(tmp, "exps.u8"))
	for r := range rows * d / 512 {
		recs := ds.Encode(rowBits[r*512 : (r+1)*512])
		if !bytes.Equal(tileCodes[r*448:(r+1)*448], recs[0][:448]) || !bytes.Equal(exps[r*7:(r+1)*7], recs[1][:7]) {
			if bad++; bad <= 5 {
				t.Errorf("dsv4-main row %d: python exponents %x, harness %x", r, exps[r*7:(r+1)*7], recs[1][:7])
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d mismatches", bad)
	}
}

func at(b []byte, i int) byte {
	if i < len(b) {
		return b[i]
	}
	return 0
}

// wantVerdicts checks a suite's verdicts against a variant that must pass
// (pass) or be caught: each row passes, or fails with no plugin fault;
// a row caught is logged with where and when.
func wantVerdicts[C any, R property.Result](t *testing.T, variant string, pass bool, vs []property.Verdict[C, R]) {
	t.Helper()
	for _, v := range vs {
		where := v.Label
		if v.Layout != nil {
			where = v.Layout.Name + "/" + v.Label
		}
		if v.Outcome.Passed() != pass || len(v.Outcome.Faults) > 0 {
			t.Errorf("%q %s: passed %v after %d cases (failure %+v, faults %v); want passed %v", variant, where,
				v.Outcome.Passed(), v.Outcome.Cases, v.Outcome.Failure, v.Outcome.Faults, pass)
		} else if !pass {
			t.Logf("%s caught on %s at case %d: %s", variant, where, v.Outcome.Cases, v.Outcome.Failure.Property)
		}
	}
}
