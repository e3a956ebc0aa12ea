// Package property drives a kernel kind's cases through its target with
// gopter and turns the first failure into a minimal, confirmed
// counterexample. It is generic over the kind: a System[C, R] draws cases
// of type C, shrinks them and checks them into results of type R; every
// kind (store, read, transfer) gets the same run.
//
// Every generated case is checked against all of the kind's invariants at
// once. On the first failure the case is run again; if the second run
// does not violate the same property the failure is reported as FLAKY
// with both outcomes and is not shrunk. Otherwise gopter shrinks it with
// the system's shrinker, keeping only candidates that still violate the
// same property — so a padding bug shrinks to a padding counterexample,
// not to whatever else a smaller case happens to break.
//
// A failure that leads with a race (Racer: two writers of one slot in one
// call, the wrong one last) is never flaky: its case is checked RaceRuns
// times and the runs that showed the violation are counted, and each
// shrink candidate gets as many tries.
//
// The shrunk case is checked once more in a fresh plugin process
// (Config.Fresh): one that fails only in the warm process that ran the
// search needs the plugin's history (Failure.NeedsHistory), which the
// report says, since its repro file will pass alone.
//
// A crash of the plugin while it ran a case is the kernel's failure when
// the system is a Crasher: the plugin is restarted and the crash becomes
// the case's result, confirmed and shrunk like a violation. Other plugin
// faults (a hang, a protocol error, a crash outside a kernel call) are
// the plugin's: it is restarted after a backoff and the run goes on until
// the same fault has happened MaxFaults times.
//
// Under stress (Suite.Stress) every check runs the case several times at
// once, on plugin processes of its own, and fails if any run fails, so a
// race that a lone run passes is found, confirmed and shrunk.
//
// A Suite runs a kind's rows (for stores, layouts × paddings) one after
// another, or side by side on several plugin processes (Jobs), and
// reports what a serial run would.
package property
