// Package plot draws PNG charts of benchmark cells with gonum/plot.
//
// Three charts answer the questions a nightly run raises:
//
//   - [LatencyCDF]: how are per-launch times distributed? One curve per
//     cell: latency on x (log when it spans a factor of four), the launches
//     at or below it on a nines scale on y, so p50, p90, p99 and p99.9 are a
//     step apart and a tail is as tall as the body. A cell of few samples is
//     drawn with a mark at each, so one sample is a dot. Cells need raw
//     samples.
//   - [Throughput]: how close to the memory roofline is each kernel, and
//     how does that change with size? GB/s against tokens, both axes log,
//     one series per plugin/layout/mode (every identity field but tokens),
//     plus the same-size copy measured in the same run as a dashed
//     roofline series.
//   - [Overlay]: what changed between two nights? Time per launch against
//     tokens, the base dashed and the new night solid, each cell a
//     comparison judged slower ringed in red.
//
// Legends sit outside the data, beside it or, with long labels, under it;
// Options.Footer names the commit, device and date under every chart.
// Series are labelled with the identity fields that differ between the
// cells plotted, so labels stay short. Every function writes a PNG to an
// io.Writer; to write a file whole or not at all, pass it through
// results.WriteFileAtomic.
package plot
