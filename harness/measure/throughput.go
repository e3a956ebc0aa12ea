package measure

// TokensPerSecond is how many tokens a launch stores per second when it
// takes ns nanoseconds.
func TokensPerSecond(tokens int, ns float64) (float64, error) {
	if ns <= 0 {
		return 0, ErrNonPositive
	}
	return float64(tokens) / ns * 1e9, nil
}

// GBPerSecond is the effective bandwidth, in decimal GB/s (1e9 bytes per
// second, the unit GPU peak bandwidth is quoted in), of a launch that
// reads and writes bytes in total in ns nanoseconds. Count both the bytes
// read and the bytes written; bytes per nanosecond equals GB/s.
func GBPerSecond(bytes int64, ns float64) (float64, error) {
	if ns <= 0 {
		return 0, ErrNonPositive
	}
	return float64(bytes) / ns, nil
}

// PercentOf is value as a percentage of peak, for example achieved GB/s
// against the device's peak GB/s.
func PercentOf(value, peak float64) (float64, error) {
	if peak <= 0 {
		return 0, ErrNonPositive
	}
	return 100 * value / peak, nil
}

// CopyRatio is kernel time over the time of a plain copy of the same
// bytes measured in the same run: 1 means the kernel runs at the copy
// roofline, 2 means it takes twice as long.
func CopyRatio(kernelNs, copyNs float64) (float64, error) {
	if kernelNs <= 0 || copyNs <= 0 {
		return 0, ErrNonPositive
	}
	return kernelNs / copyNs, nil
}
