package compare

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kvharness/kvharness/harness/results"
)

// deviceKeys are the config keys two comparable files must share: what
// ran the kernels and how. Nights on two devices differ by the device, and
// every cell would be "slower" or "faster" for that reason alone.
var deviceKeys = []string{"gpu", "cpu", "clocks", "goos", "goarch"}

// A ConfigError is a comparison refused because the files ran on
// different devices or configurations.
type ConfigError struct {
	Key       string
	Base, New string // the key's value in each file
	BaseFile  string
	NewFile   string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("%s ran on %s %q, %s on %q: nights on different devices or configurations are not comparable (compare with a baseline of this device, or pass --allow-config-diff to compare them anyway)",
		e.BaseFile, e.Key, e.Base, e.NewFile, e.New)
}

// checkConfigs refuses files whose device keys differ, unless allow (then
// they are warnings), and warns of other keys that differ (a driver, a Go
// version), leaving out those expected to change every night
// (results.BenchstatIgnore).
func checkConfigs(old, next *table, allow bool) ([]error, error) {
	volatile := append(strings.Split(results.BenchstatIgnore, ","), results.LinesKey)
	var keys []string
	for k := range old.config {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var out []error
	for _, k := range keys {
		a, b := old.config[k], next.config[k]
		if a == "" || b == "" || a == b || slices.Contains(volatile, k) {
			continue
		}
		if slices.Contains(deviceKeys, k) && !allow {
			return nil, &ConfigError{k, a, b, old.name, next.name}
		}
		out = append(out, fmt.Errorf("config %s differs: %q in %s, %q in %s; the runs may not be comparable", k, a, old.name, b, next.name))
	}
	return out, nil
}
