package compare

import (
	"encoding/csv"
	"encoding/json"
	"io"
	"strconv"
)

// ReportSchema is the JSON form of a comparison.
const ReportSchema = "kvharness.compare/v1"

func writeCSV(w io.Writer, r *Report, o WriteOptions) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"name", "verdict", "unit", "base", "base_lo", "base_hi", "base_runs", "new", "new_lo", "new_hi", "new_runs",
		"delta_pct", "p", "ref", "net_delta_pct", "why", "lacks"})
	for _, c := range r.Cells {
		if o.OnlySlower && c.Verdict != Slower {
			continue
		}
		cw.Write([]string{c.Name, string(c.Verdict), c.Unit, num(c.Old.Center), num(c.Old.Lo), num(c.Old.Hi), strconv.Itoa(c.Old.N),

			num(c.New.Center), num(c.New.Lo), num(c.New.Hi), strconv.Itoa(c.New.N), num(c.DeltaPct), num(c.P), c.Ref, num(c.NetDeltaPct), c.Why, c.Lacks})
	}
	cw.Flush()
	return cw.Error()
}

func num(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }

type jsonSide struct {
	Center float64 `json:"center"`
	Lo     float64 `json:"lo"`
	Hi     float64 `json:"hi"`
	Runs   int     `json:"runs"`
}

type jsonRow struct {
	Unit     string   `json:"unit"`
	Better   int      `json:"better"`
	Base     jsonSide `json:"base"`
	New      jsonSide `json:"new"`
	DeltaPct float64  `json:"delta_pct"`
	P        float64  `json:"p"`
}

type jsonCell struct {
	Name        string    `json:"name"`
	Verdict     Verdict   `json:"verdict"`
	Why         string    `json:"why,omitempty"`
	Lacks       string    `json:"lacks,omitempty"`
	Judged      jsonRow   `json:"judged"`
	Ref         string    `json:"ref,omitempty"`
	RefDeltaPct float64   `json:"ref_delta_pct,omitempty"`
	NetDeltaPct float64   `json:"net_delta_pct,omitempty"`
	Evidence    []jsonRow `json:"evidence"`
}

type jsonReport struct {
	Schema   string               `json:"schema"`
	Base     string               `json:"base"`
	New      string               `json:"new"`
	Rerun    string               `json:"rerun,omitempty"`
	Config   [2]map[string]string `json:"config"`
	Options  jsonOptions          `json:"options"`
	Counts   map[Verdict]int      `json:"counts"`
	Cells    []jsonCell           `json:"cells"`
	Warnings []string             `json:"warnings,omitempty"`
}

type jsonOptions struct {
	Metric           string  `json:"metric"`
	Alpha            float64 `json:"alpha"`
	Threshold        float64 `json:"threshold"`
	LatencyThreshold float64 `json:"latency_threshold"`
	Absolute         bool    `json:"absolute"`
	Filter           string  `json:"filter,omitempty"`
}

func toJSONRow(r Row) jsonRow {
	s := func(x Side) jsonSide { return jsonSide{finite(x.Center), finite(x.Lo), finite(x.Hi), x.N} }
	return jsonRow{r.Unit, r.Better, s(r.Old), s(r.New), finite(r.DeltaPct), r.P}
}

// finite keeps JSON valid: an infinite change (from zero) is written as
// the largest float.
func finite(v float64) float64 {
	switch {
	case v > 1e308:
		return 1e308
	case v < -1e308:
		return -1e308
	case v != v:
		return 0
	}
	return v
}

func writeJSON(w io.Writer, r *Report, o WriteOptions) error {
	out := jsonReport{Schema: ReportSchema, Base: r.Base, New: r.New, Rerun: r.Rerun, Config: r.Config, Counts: map[Verdict]int{},
		Options: jsonOptions{r.Options.Metric, r.Options.Alpha, r.Options.Threshold, r.Options.LatencyThreshold, r.Options.Absolute, r.Options.Filter}}
	for _, v := range verdicts {
		out.Counts[v] = r.Count(v)
	}
	for _, c := range r.Cells {
		if o.OnlySlower && c.Verdict != Slower {
			continue
		}
		jc := jsonCell{Name: c.Name, Verdict: c.Verdict, Why: c.Why, Lacks: c.Lacks, Judged: toJSONRow(c.Row), Ref: c.Ref,
			RefDeltaPct: c.RefDeltaPct, NetDeltaPct: c.NetDeltaPct, Evidence: []jsonRow{}}
		for _, e := range c.Evidence {
			jc.Evidence = append(jc.Evidence, toJSONRow(e))
		}
		out.Cells = append(out.Cells, jc)
	}
	for _, wn := range r.Warnings {
		out.Warnings = append(out.Warnings, wn.Error())
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
