package compare

import (
	"slices"
	"strings"
)

// A bench file holds, beside each kernel's rows ("Store/...", "Load/..."), the floors
// the same run measured: a device copy of the same bytes ("Copy/...", in
// eager mode) and an empty kernel's launch ("Empty/...", at tokens=1).
// Between two nights the machine itself drifts (clocks, launch overhead:
// an H200 rerun of the same binaries moved empty graph launches by 12%),
// and a kernel's time moves with its floor. So a kernel row is judged by
// its change net of its floor's change: the floor that bounds it, the
// empty launch where the kernel takes under twice that, else the copy.
// Floors themselves are references, never judged; Options.Absolute
// judges raw changes instead.

// launchBound: a kernel under this many empty launches is bound by launch.
const launchBound = 2.0

// drift finds the reference row of a kernel row in both files.
type drift struct{ old, next *table }

// reference returns the name of k's floor row and its change new/old, or
// ok false when k is not a kernel row or its floor is missing.
func (d drift) reference(k rowKey) (name string, ratio float64, ok bool) {
	_, keys, found := strings.Cut(k.name, "/")
	if !found || isFloor(k.name) {
		return "", 0, false
	}
	empty := "Empty/" + withKey(keys, "tokens", "1")
	cp := "Copy/" + withKey(keys, "mode", "eager")
	kernel, okK := median(d.old.values[k])
	floor, okE := median(d.old.values[rowKey{empty, k.unit}])
	order := []string{cp, empty}
	if okK && okE && kernel <= launchBound*floor {
		order = []string{empty, cp}
	}
	for _, ref := range order {
		rk := rowKey{ref, k.unit}
		o, ok1 := median(d.old.values[rk])
		n, ok2 := median(d.next.values[rk])
		if ok1 && ok2 && o > 0 {
			return ref, n / o, true
		}
	}
	return "", 0, false
}

// isFloor reports whether a row is a floor measured beside the kernels.
func isFloor(name string) bool {
	return strings.HasPrefix(name, "Copy/") || strings.HasPrefix(name, "Empty/")
}

// withKey sets key=value in a name's slash-separated key=value parts.
func withKey(keys, key, value string) string {
	parts := strings.Split(keys, "/")
	for i, p := range parts {
		if k, _, ok := strings.Cut(p, "="); ok && k == key {
			parts[i] = key + "=" + value
		}
	}
	return strings.Join(parts, "/")
}

func median(xs []float64) (float64, bool) {
	if len(xs) == 0 {
		return 0, false
	}
	s := slices.Sorted(slices.Values(xs))
	if len(s)%2 == 1 {
		return s[len(s)/2], true
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2, true
}
