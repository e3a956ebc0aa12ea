package plot

import (
	"errors"
	"fmt"

	"github.com/kvharness/kvharness/harness/results"
)

// ErrNoCells is returned when there is nothing to plot.
var ErrNoCells = errors.New("no cells to plot (select at least one cell)")

// A MissingDataError names a cell that lacks what a chart needs.
type MissingDataError struct {
	Key  results.Key
	What string // what is missing and how to get it
}

func (e *MissingDataError) Error() string {
	return fmt.Sprintf("cell %s: %s", e.Key, e.What)
}
