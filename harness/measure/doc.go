// Package measure turns nanosecond samples into statistics and decides
// when to stop sampling.
//
// It is the GPU-free half of measurement: the runner times launches and
// hands each per-launch time (in nanoseconds, float64) to this package.
// Nothing here touches a device, a clock it was not given, or a file, so
// every rule is unit-tested on synthetic samples.
//
// The pipeline is:
//
//  1. A [Criterion] (nvbench's policy: min samples, max noise, min time,
//     time limit, sample cap) is started with [Criterion.Start], giving a
//     [Stopper]. The runner calls Add after every sample and stops when
//     Done reports true. Reason then says which rule stopped it, with the
//     numbers, so "timed out while noisy" is never mistaken for "converged".
//  2. [Summarize] reduces the samples to a [Summary]: min, max, mean,
//     sample standard deviation, type-7 percentiles (p50, p90, p99, p99.9)
//     and noise.
//  3. [TokensPerSecond], [GBPerSecond], [PercentOf] and [CopyRatio] derive
//     throughput and roofline numbers from a time.
//
// Noise is always the relative sample standard deviation, stddev/mean, as
// a fraction (0.005 is 0.5%). It is computed on the samples taken so far,
// as nvbench does, so a run that never settles is stopped by its time
// limit and says so.
//
// Percentiles use github.com/montanaflynn/stats Percentile, which since
// v0.8.0 is linear interpolation between closest ranks (Hyndman & Fan
// type 7, NumPy's default): for 1..10, p50 = 5.5, p90 = 9.1, p99 = 9.91.
package measure
