package benchrun

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/kvharness/kvharness/harness/internal/inputfile"
	"github.com/kvharness/kvharness/harness/results"
	"github.com/kvharness/kvharness/harness/shard"
)

// ManifestSchema is the JSON form of night.json.
const ManifestSchema = "kvharness.night/v1"

// A Manifest says what a night, or one shard of it, covers: the matrix,
// the whole plan's units (counted, and as a digest), the units this part
// owns and the cells they make. kvharness merge joins shards only when
// their manifests show one plan, every part once and no cell twice.
type Manifest struct {
	Schema     string        `json:"schema"`
	Shard      string        `json:"shard"` // i/n; 1/1 for a whole night
	Merged     []string      `json:"merged,omitempty"`
	Matrix     Matrix        `json:"matrix"`
	PlanUnits  int           `json:"plan_units"`
	PlanDigest string        `json:"plan_digest"`
	AllUnits   []string      `json:"all_units"` // the whole plan's units, in matrix order
	Units      []string      `json:"units"`
	Cells      []results.Key `json:"cells"`
	Commit     string        `json:"commit,omitempty"`
	Device     string        `json:"device,omitempty"`
	Started    time.Time     `json:"started"`
}

// NewManifest describes the plan's part of the night.
func NewManifest(p *Plan, m Matrix, spec shard.Spec, env results.Env) Manifest {
	man := Manifest{Schema: ManifestSchema, Shard: spec.String(), Matrix: m, PlanUnits: len(p.all), PlanDigest: p.Digest(),
		Commit: env.Commit, Device: Device(env), Started: env.Time}
	for _, u := range p.all {
		man.AllUnits = append(man.AllUnits, u.Key())
	}
	for _, u := range p.Units() {
		man.Units = append(man.Units, u.Key())
	}
	for _, id := range p.Cells() {
		man.Cells = append(man.Cells, id.Key())
	}
	return man
}

// WriteManifest writes m to path, whole or not at all.
func WriteManifest(path string, m Manifest) error {
	return results.WriteFileAtomic(path, 0o644, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(m)
	})
}

// maxManifestBytes bounds night.json: it lists a night's units and cell
// keys, some hundred bytes each.
const maxManifestBytes = 64 << 20

// ReadManifest reads a night.json, bounded.
func ReadManifest(path string) (Manifest, error) {
	var m Manifest
	data, err := inputfile.Read(path, "night manifest", maxManifestBytes)
	if err != nil {
		return m, fmt.Errorf("%w (is this a kvharness bench --out folder?)", err)
	}
	// Unmarshal, not a strict decoder: a field a newer kvharness adds
	// keeps the schema's version (bench/SCHEMA.md), so it is let through;
	// data after the object is not, nor a key given twice.
	if err := inputfile.UniqueKeys(data); err != nil {
		return m, fmt.Errorf("%s: %w", path, err)
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return m, fmt.Errorf("%s: %w", path, err)
	}
	if m.Schema != ManifestSchema {
		return m, fmt.Errorf("%s: schema %q; this kvharness reads %s; merge folders written by kvharness bench of this version", path, m.Schema, ManifestSchema)
	}
	return m, nil
}
