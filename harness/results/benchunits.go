package results

// The units WriteBench emits on each result line.
//
// Latencies are "<stat>-ns/op". benchunit.Tidy rewrites the "ns" in the
// numerator to "sec" (p99-ns/op becomes p99-sec/op, ×1e-9), so benchstat
// shows them scaled as µs or ms like ns/op itself. Names such as
// "p99_ns/op" or "us/op" would not be tidied or scaled. ns/op is the mean
// launch, as go test writes it; p50-ns/op the median, the robust time a
// comparison judges. The chosen quantiles' units (QuantileUnit) follow.
//
// Bandwidth is "GB/s", decimal (1e9 B/s), the unit GPU peak bandwidth is
// quoted in, so numbers match nvbench and datasheets. benchunit leaves
// "GB/s" untidied and scales it decimally (1.2k GB/s for 1.2 TB/s). "MB/s"
// or "B/s" would be tidied to B/s and shown with binary prefixes (GiB/s),
// which would not line up with the decimal peak and roofline numbers.
//
// "tokens/s" and "copy-ratio" are plain decimal units.
//
// Only ns/op and B/s have a built-in direction in benchfmt, so WriteBench
// also writes a "Unit <name> better=lower|higher" line for every unit;
// benchstat and kvharness compare read it to tell a regression from an
// improvement.
const (
	UnitTime      = "ns/op"       // mean per-launch time
	UnitP50       = "p50-ns/op"   // median per-launch time
	UnitP99       = "p99-ns/op"   // 99th percentile, when chosen
	UnitP999      = "p99.9-ns/op" // 99.9th percentile, when chosen
	UnitGBps      = "GB/s"        // (bytes read + written) / median time
	UnitTokens    = "tokens/s"    // tokens / median time
	UnitCopyRatio = "copy-ratio"  // median time / same-size copy time
)

// A BenchUnit is a unit WriteBench emits and which direction is better:
// -1 lower, +1 higher (benchfmt.UnitMetadataMap.GetBetter's convention).
type BenchUnit struct {
	Name   string
	Better int
}

// BenchUnits lists the fixed units WriteBench emits, in line order; the
// chosen quantiles' units (QuantileUnit) come between p50-ns/op and GB/s.
var BenchUnits = []BenchUnit{
	{UnitTime, -1},
	{UnitP50, -1},
	{UnitGBps, +1},
	{UnitTokens, +1},
	// The copy ratio divides two measurements, so it carries both their
	// noise; it is shown, not judged: no direction, so compare reports a
	// change in it but never calls it a regression. The kernel's own time
	// rows carry the verdict.
	{UnitCopyRatio, 0},
}

// BenchstatIgnore lists the config keys that change from night to night
// without changing what is measured. benchstat splits results with
// different config values into separate tables, so compare two nights
// with
//
//	benchstat -ignore commit,host,go,plugin-version base.txt new.txt
//
// (kvharness compare groups by name and unit only and needs no flag).
const BenchstatIgnore = "commit,host,go,plugin-version,date"
