package read

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

// Composed is a composed check's result: the pair, and a row per padding.
type Composed struct {
	Writer, Reader             Side
	WriterRecipe, ReaderRecipe string
	Slots                      int
	Rows                       []ComposedRow
}

// ComposedRow is one padding's cases: how many passed, and the first
// that failed, or the plugin fault that ended the row.
type ComposedRow struct {
	Padding Padding
	Passed  int
	Failure *ComposedFailure
	Fault   error
	// FaultSeed is the seed of the case the fault ended the row at.
	FaultSeed int64
}

// ComposedFailure is a failing case and what it found.
type ComposedFailure struct {
	Index int // 1-based, of the row's cases
	Case  *ComposedCase
	// Minimal is the smallest case found that fails as Case does (nil
	// when Case is), after Checks re-checks; Findings are its own.
	Minimal  *ComposedCase
	Checks   int
	Findings []ComposeFinding
}

// Failed reports whether any row found a violation.
func (c *Composed) Failed() bool {
	for _, r := range c.Rows {
		if r.Failure != nil {
			return true
		}
	}
	return false
}

// Faulted reports whether a plugin fault ended any row.
func (c *Composed) Faulted() bool {
	for _, r := range c.Rows {
		if r.Fault != nil {
			return true
		}
	}
	return false
}

// row runs a padding's cases until one fails or cfg.Cases pass.
func (p *pair) row(ctx context.Context, pad Padding, cfg ComposeConfig) (ComposedRow, error) {
	row := ComposedRow{Padding: pad}
	for i, seed := range CaseSeeds(cfg.Seed, cfg.Cases) {
		if err := ctx.Err(); err != nil {
			return row, err
		}
		c := DrawComposed(seed, pad, cfg.Slots, p.writer.Layout.PageSize)
		fs, err := p.check(ctx, c, cfg)
		if err != nil {
			row.Fault, row.FaultSeed = fmt.Errorf("case %d (%v): %w", i+1, c, err), seed
			return row, nil
		}
		if len(fs) > 0 {
			row.Failure = &ComposedFailure{Index: i + 1, Case: c, Findings: fs}
			if small, sfs, n := p.shrink(ctx, c, fs, cfg); small != c {
				row.Failure.Minimal, row.Failure.Findings, row.Failure.Checks = small, sfs, n
			}
			return row, nil
		}
		row.Passed++
	}
	return row, nil
}

// check runs one case: the writer's store, its bytes judged, the
// reader's probes judged; then the pool and staging go back to the
// background.
func (p *pair) check(ctx context.Context, c *ComposedCase, cfg ComposeConfig) (fs []ComposeFinding, err error) {
	defer func() {
		if rerr := p.restore(); err == nil {
			err = rerr
		}
	}()
	if err := p.store(ctx, c); err != nil {
		return nil, fmt.Errorf("the writer's store: %w", err)
	}
	recs := make([][][]byte, len(c.Keys))
	for i, k := range c.Keys {
		if recs[i], err = p.records(k.Slot); err != nil {
			return nil, err
		}
		fs = append(fs, judgeWritten(p.writer.Layout, k, recs[i], cfg.Mode)...)
	}
	seen, err := p.probe(ctx, c)
	if err != nil {
		return nil, fmt.Errorf("the reader's read: %w", err)
	}
	for i, k := range c.Keys {
		fs = append(fs, judgeSeen(p.writer.Layout, k, recs[i], seen)...)
	}
	return fs, nil
}

// ReplayFunc is the command line that checks case seed of a row again.
type ReplayFunc func(pad Padding, seed int64) string

// maxShownFindings bounds a failure's findings in the text report.
const maxShownFindings = 6

// WriteText prints a composed check: what was paired, a table of rows,
// then each failure with its findings and replay line.
func (c *Composed) WriteText(w io.Writer, replay ReplayFunc) {
	wl, rl := c.Writer.Layout, c.Reader.Layout
	fmt.Fprintf(w, "writer %s → reader %s: one pool of %d slots\n", c.Writer, c.Reader, c.Slots)
	fmt.Fprintf(w, "  writer: store kernel, layout %s D=%d P=%d%s\n", wl.Name, wl.HeadDim, wl.PageSize, recipeSuffix(c.WriterRecipe))
	fmt.Fprintf(w, "  reader: read kernel, layout %s D=%d P=%d%s\n", rl.Name, rl.HeadDim, rl.PageSize, recipeSuffix(c.ReaderRecipe))
	fmt.Fprintf(w, "  each case: the writer stores a read case's keys under the padding; the reader scores every key against a one-hot query per element, so each score is one element as it reads it\n\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "padding\tcases\twritten\tseen\tmissing\tfaults")
	for _, r := range c.Rows {
		faults := 0
		if r.Fault != nil {
			faults = 1
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%d\n", r.Padding, r.Passed+failedCount(r), r.verdict(FindWritten), r.verdict(FindSeen), r.verdict(FindMissing), faults)
	}
	tw.Flush()
	for _, r := range c.Rows {
		if r.Failure != nil {
			c.writeFailure(w, r, replay)
		}
		if r.Fault != nil {
			fmt.Fprintf(w, "\nFAULT padding %s: %v\n  replay: %s\n", r.Padding, r.Fault, replay(r.Padding, r.FaultSeed))
		}
	}
}

func recipeSuffix(r string) string {
	if r == "" {
		return ""
	}
	return ", recipe " + r
}

func failedCount(r ComposedRow) int {
	if r.Failure != nil {
		return 1
	}
	return 0
}

// verdict is a row's column for a finding kind.
func (r ComposedRow) verdict(kind string) string {
	if r.Failure == nil {
		return "ok"
	}
	for _, f := range r.Failure.Findings {
		if f.Kind == kind {
			return "FAIL"
		}
	}
	return "ok"
}

func (c *Composed) writeFailure(w io.Writer, r ComposedRow, replay ReplayFunc) {
	f := r.Failure
	fmt.Fprintf(w, "\nFAIL writer %s → reader %s · %s · padding %s\n", c.Writer, c.Reader, c.Writer.Layout.Name, r.Padding)
	fmt.Fprintf(w, "  case %d, seed %d: %v\n", f.Index, f.Case.Seed, f.Case)
	if f.Minimal != nil {
		fmt.Fprintf(w, "  minimal case (%d re-check%s): %v\n", f.Checks, plural(f.Checks), f.Minimal)
	}
	for _, x := range f.Findings[:min(len(f.Findings), maxShownFindings)] {
		fmt.Fprintf(w, "  %s: slot %d, field %s%s: %s\n", x.Kind, x.Slot, x.Field, offsetNote(x.Off), x.Detail)
		for _, e := range x.Elements {
			fmt.Fprintf(w, "    %v\n", e)
		}
		if more := x.Wrong - len(x.Elements); more > 0 {
			fmt.Fprintf(w, "    … %d more element%s\n", more, plural(more))
		}
	}
	if more := len(f.Findings) - maxShownFindings; more > 0 {
		fmt.Fprintf(w, "  … %d more finding%s (--json lists them)\n", more, plural(more))
	}
	fmt.Fprintf(w, "  %s\n", c.blame(f))
	fmt.Fprintf(w, "  replay: %s\n", replay(r.Padding, f.Case.Seed))
}

// FailureText is row i's failure as WriteText prints it ("" when the row
// passed): a JUnit failure's body.
func (c *Composed) FailureText(i int, replay ReplayFunc) string {
	r := c.Rows[i]
	if r.Failure == nil {
		return ""
	}
	var b strings.Builder
	c.writeFailure(&b, r, replay)
	return strings.TrimPrefix(b.String(), "\n")
}

// FailureLine is row i's failure in one line: a JUnit failure's message.
func (c *Composed) FailureLine(i int) string {
	f := c.Rows[i].Failure
	if f == nil {
		return ""
	}
	kinds := []string{}
	for _, x := range f.Findings {
		if !slices.Contains(kinds, x.Kind+" "+x.Field) {
			kinds = append(kinds, x.Kind+" "+x.Field)
		}
	}
	return fmt.Sprintf("writer %s → reader %s, %s, padding %s: case %d: %s", c.Writer, c.Reader, c.Writer.Layout.Name, c.Rows[i].Padding, f.Index, strings.Join(kinds, ", "))
}

func offsetNote(off int) string {
	if off < 0 {
		return ""
	}
	return fmt.Sprintf(" at pool offset %d", off)
}

// blame says which side a failure points at: the writer, when its own
// bytes fail its layout; else the pair's contract.
func (c *Composed) blame(f *ComposedFailure) string {
	for _, x := range f.Findings {
		if x.Kind == FindWritten {
			return fmt.Sprintf("the writer's bytes fail its own layout: check it alone (kvharness check --plugin %s --layout %s)", c.Writer.Arg, c.Writer.Layout.Name)
		}
	}
	var diff []string
	if c.Writer.Layout.Name != c.Reader.Layout.Name {
		diff = append(diff, fmt.Sprintf("the writer lays the cache out as %s, the reader reads it as %s", c.Writer.Layout.Name, c.Reader.Layout.Name))
	}
	if w, r := scaleRule(c.Writer.Layout), scaleRule(c.Reader.Layout); w != r {
		diff = append(diff, fmt.Sprintf("the writer's scales follow the %s rule, the reader takes them as %s", w, r))
	}
	if len(diff) == 0 {
		return "the writer's bytes pass its layout and the reader misreads them: check the reader alone (kvharness check --plugin " + c.Reader.Arg + " --kernel read)"
	}
	return "the writer's bytes pass its layout, and the reader sees other values: " + strings.Join(diff, "; ")
}

// WriteJSON prints the result as one JSON object.
func (c *Composed) WriteJSON(w io.Writer, replay ReplayFunc) error {
	type side struct {
		Plugin  string `json:"plugin"`
		Variant string `json:"variant,omitempty"`
		Layout  string `json:"layout"`
		HeadDim int    `json:"head_dim"`
		Page    int    `json:"page_size"`
		Recipe  string `json:"recipe,omitempty"`
	}
	type row struct {
		Padding  Padding          `json:"padding"`
		Passed   int              `json:"passed"`
		Case     *ComposedCase    `json:"case,omitempty"`
		Minimal  *ComposedCase    `json:"minimal,omitempty"`
		Findings []ComposeFinding `json:"findings,omitempty"`
		Fault    string           `json:"fault,omitempty"`
		Replay   string           `json:"replay,omitempty"`
	}
	mk := func(s Side, recipe string) side {
		return side{s.Arg, s.Variant, s.Layout.Name, s.Layout.HeadDim, s.Layout.PageSize, recipe}
	}
	out := struct {
		Writer side  `json:"writer"`
		Reader side  `json:"reader"`
		Slots  int   `json:"slots"`
		Rows   []row `json:"rows"`
	}{Writer: mk(c.Writer, c.WriterRecipe), Reader: mk(c.Reader, c.ReaderRecipe), Slots: c.Slots}
	for _, r := range c.Rows {
		x := row{Padding: r.Padding, Passed: r.Passed}
		if r.Failure != nil {
			x.Case, x.Minimal, x.Findings, x.Replay = r.Failure.Case, r.Failure.Minimal, r.Failure.Findings, replay(r.Padding, r.Failure.Case.Seed)
		}
		if r.Fault != nil {
			x.Fault = r.Fault.Error()
		}
		out.Rows = append(out.Rows, x)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
