package workload

// The slice steps the kinds' shrinkers take.

// Without is xs without its element j: a shrinker's step.
func Without(xs []int, j int) []int {
	return append(append([]int(nil), xs[:j]...), xs[j+1:]...)
}

// Indices is 0, 1, …, n-1: the positions of a list a shrinker keeps a
// part of.
func Indices(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// FilterMap rewrites every element of xs with f, dropping those it
// refuses: how a shrinker renumbers what names a dropped room, layer or
// page, and drops what named it.
func FilterMap[T any](xs []T, f func(T) (T, bool)) []T {
	var out []T
	for _, x := range xs {
		if y, ok := f(x); ok {
			out = append(out, y)
		}
	}
	return out
}
