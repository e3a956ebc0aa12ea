// Package check runs store cases against a plugin and judges them.
//
// A Target is one plugin attached to one arena holding one pool of one
// layout. Target.Check runs a case three ways — as given, again (the same
// bytes must come out: determinism), and with only its valid rows (the
// padded run must be byte-identical: differential) — and hands each run's
// changes to the oracle. Between runs only the bytes a run changed are put
// back, so a case costs one scan of the pool per run, not a refill.
package check
