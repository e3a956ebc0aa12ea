package pd

import (
	"github.com/kvharness/kvharness/harness/kind"
	"github.com/kvharness/kvharness/harness/report"
)

// Header is the report header of a pd kind's check over g whose rows drew
// their shapes from sh (nil: none drawn): the geometry's outline, and the
// shapes the rows took under the title.
func Header(p kind.Params, s *kind.Session, g Geometry, sh *kind.Shapes) report.Header {
	h := p.GeometryHeader(s, g)
	if sh.Drawn() {
		h.About = g.Outline()
		h.Coverage, h.Shapes = sh.Lines(), true
		h.JSON = append(h.JSON, report.Field{Key: "shapes", Value: sh.Covered()})
	}
	return h
}
