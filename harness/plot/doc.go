// Package plot draws PNG charts of benchmark cells with gonum/plot.
//
// Two charts answer the two questions a nightly run raises:
//
//   - [LatencyCDF]: how are per-launch times distributed? One curve per
//     cell (x: latency in µs, y: fraction of launches at or below it),
//     with a log x axis when the times span a decade or more, so a long
//     tail is visible next to the median. Cells need raw samples.
//   - [Throughput]: how close to the memory roofline is each kernel, and
//     how does that change with size? GB/s against tokens on a log2 axis,
//     one series per plugin/layout/mode (every identity field but tokens),
//     plus the same-size copy measured in the same run as a dashed
//     roofline series.
//
// Series are labelled with the identity fields that differ between the
// cells plotted, so labels stay short. Both functions write a PNG to an
// io.Writer; to write a file whole or not at all, pass them through
// results.WriteFileAtomic.
package plot
