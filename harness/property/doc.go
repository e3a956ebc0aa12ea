// Package property drives store cases through a target with gopter and
// turns the first failure into a minimal, confirmed counterexample.
//
// Every generated case is checked against all invariants at once (one
// plugin call per run, see package check): padding, guard, stride, alias,
// value, determinism and differential. On the first failure the case is
// run again; if the second run does not violate the same property the
// failure is reported as FLAKY
// with both outcomes and is not shrunk. Otherwise gopter shrinks it with
// workload.Shrink, keeping only candidates that still violate the same
// property — so a padding bug shrinks to a padding counterexample, not to
// whatever else a smaller case happens to break.
//
// A plugin fault (crash, hang, protocol error) stops the run: it is the
// plugin's failure, not the kernel's, and is reported as such.
package property
