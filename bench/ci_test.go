package bench

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// The example CI files are checked here, where no actionlint or kubectl
// may be installed: the workflow's shard matrix and the Job's completions
// must agree with the n of their --shard, every part must reach merge,
// and the manifest must be a batch/v1 Indexed Job (a schema of the fields
// it uses, unknown fields refused). actionlint, where installed, checks the
// workflow in full:
//
//	go install github.com/rhysd/actionlint/cmd/actionlint@v1.7.12
//	actionlint .github/workflows/nightly-bench.yml

type workflow struct {
	Name string         `yaml:"name"`
	On   map[string]any `yaml:"on"`
	Jobs map[string]struct {
		Needs    any `yaml:"needs"`
		Strategy struct {
			Matrix map[string][]any `yaml:"matrix"`
		} `yaml:"strategy"`
		Steps []struct {
			Name string         `yaml:"name"`
			Uses string         `yaml:"uses"`
			Run  string         `yaml:"run"`
			With map[string]any `yaml:"with"`
		} `yaml:"steps"`
	} `yaml:"jobs"`
}

func readYAML(t *testing.T, path string, v any, strict bool) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(strict)
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

var shardArg = regexp.MustCompile(`--shard "[^"/]*/(\d+)"`)

// TestWorkflowShards: the shard job's matrix is 1..n for the n of its
// --shard, merge takes every part and compares strictly, and each fuzz
// target exists.
func TestWorkflowShards(t *testing.T) {
	var w workflow
	readYAML(t, "../.github/workflows/nightly-bench.yml", &w, false)
	shardJob, merge, fuzz := w.Jobs["shard"], w.Jobs["merge"], w.Jobs["fuzz"]
	var bench string
	for _, s := range shardJob.Steps {
		if strings.Contains(s.Run, "bench") && strings.Contains(s.Run, "--shard") {
			bench = s.Run
		}
	}
	m := shardArg.FindStringSubmatch(bench)
	if m == nil || !strings.Contains(bench, "${{ matrix.shard }}/") || !strings.Contains(bench, "--strict") {
		t.Fatalf("the shard job's bench step %q: want --shard \"${{ matrix.shard }}/n\" and --strict", bench)
	}
	n, _ := strconv.Atoi(m[1])
	var shards []int
	for _, v := range shardJob.Strategy.Matrix["shard"] {
		shards = append(shards, v.(int))
	}
	if want := seq(n); !slices.Equal(shards, want) {
		t.Errorf("matrix.shard = %v for --shard i/%d; want %v", shards, n, want)
	}
	if fmt.Sprint(merge.Needs) != "shard" {
		t.Errorf("merge needs %v, want the shard job", merge.Needs)
	}
	var mergeRun, compareRun string
	for _, s := range merge.Steps {
		if strings.Contains(s.Run, " merge ") {
			mergeRun = s.Run
		}
		if strings.Contains(s.Run, " compare ") {
			compareRun = s.Run
		}
	}
	for i := range seq(n) {
		if !strings.Contains(mergeRun, fmt.Sprintf("shard-%d", i+1)) {
			t.Errorf("merge step %q lacks shard-%d", mergeRun, i+1)
		}
	}
	if !strings.Contains(compareRun, "--strict") || !strings.Contains(compareRun, "night/bench.txt") {
		t.Errorf("compare step %q: want --strict against the merged night", compareRun)
	}
	if len(fuzz.Strategy.Matrix["include"]) == 0 {
		t.Error("the fuzz job's matrix includes no target")
	}
	for _, entry := range fuzz.Strategy.Matrix["include"] {
		e, _ := entry.(map[string]any)
		target, _ := e["target"].(string)
		pkg, _ := e["pkg"].(string)
		if !fuzzTargetExists(t, pkg, target) {
			t.Errorf("fuzz target %s is not a func in %s", target, pkg)
		}
	}
}

func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i + 1
	}
	return out
}

func fuzzTargetExists(t *testing.T, pkg, name string) bool {
	files, _ := filepath.Glob(filepath.Join("..", filepath.FromSlash(pkg), "*_test.go"))
	for _, f := range files {
		if data, err := os.ReadFile(f); err == nil && bytes.Contains(data, []byte("func "+name+"(f *testing.F)")) {
			return true
		}
	}
	return false
}

// job is the part of batch/v1 Job the manifest uses; decoding with known
// fields only refuses a misspelt or misplaced key.
type job struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name   string            `yaml:"name"`
		Labels map[string]string `yaml:"labels"`
	} `yaml:"metadata"`
	Spec struct {
		CompletionMode          string `yaml:"completionMode"`
		Completions             int    `yaml:"completions"`
		Parallelism             int    `yaml:"parallelism"`
		BackoffLimitPerIndex    *int   `yaml:"backoffLimitPerIndex"`
		MaxFailedIndexes        *int   `yaml:"maxFailedIndexes"`
		TTLSecondsAfterFinished int    `yaml:"ttlSecondsAfterFinished"`
		Template                struct {
			Metadata struct {
				Labels map[string]string `yaml:"labels"`
			} `yaml:"metadata"`
			Spec struct {
				RestartPolicy string `yaml:"restartPolicy"`
				Containers    []struct {
					Name      string   `yaml:"name"`
					Image     string   `yaml:"image"`
					Command   []string `yaml:"command"`
					Args      []string `yaml:"args"`
					Resources struct {
						Requests map[string]string `yaml:"requests"`
						Limits   map[string]string `yaml:"limits"`
					} `yaml:"resources"`
					VolumeMounts []struct {
						Name      string `yaml:"name"`
						MountPath string `yaml:"mountPath"`
						ReadOnly  bool   `yaml:"readOnly"`
					} `yaml:"volumeMounts"`
				} `yaml:"containers"`
				Volumes []struct {
					Name                  string `yaml:"name"`
					PersistentVolumeClaim *struct {
						ClaimName string `yaml:"claimName"`
					} `yaml:"persistentVolumeClaim"`
					ConfigMap *struct {
						Name string `yaml:"name"`
					} `yaml:"configMap"`
				} `yaml:"volumes"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

// TestIndexedJob: the manifest is an Indexed Job whose completions equal
// the n of --shard, and pod k (JOB_COMPLETION_INDEX=k) runs shard k+1/n
// into a folder of its own on a mounted volume.
func TestIndexedJob(t *testing.T) {
	var j job
	readYAML(t, "../deploy/k8s/bench-job.yaml", &j, true)
	s := j.Spec
	switch {
	case j.APIVersion != "batch/v1" || j.Kind != "Job" || j.Metadata.Name == "":
		t.Fatalf("%s %s %q: want a named batch/v1 Job", j.APIVersion, j.Kind, j.Metadata.Name)
	case s.CompletionMode != "Indexed":
		t.Errorf("completionMode %q: JOB_COMPLETION_INDEX is set in Indexed mode only", s.CompletionMode)
	case s.Completions != s.Parallelism || s.Completions < 1:
		t.Errorf("completions %d, parallelism %d: want one pod per shard, all at once", s.Completions, s.Parallelism)
	case s.Template.Spec.RestartPolicy != "Never" && s.Template.Spec.RestartPolicy != "OnFailure":
		t.Errorf("restartPolicy %q: a Job's pods want Never or OnFailure", s.Template.Spec.RestartPolicy)
	case len(s.Template.Spec.Containers) != 1 || s.Template.Spec.Containers[0].Image == "":
		t.Fatalf("want one container with an image")
	}
	c := s.Template.Spec.Containers[0]
	script := strings.Join(c.Args, " ")
	m := shardArg.FindStringSubmatch(script)
	if m == nil || m[1] != strconv.Itoa(s.Completions) {
		t.Fatalf("args %q: want --shard \"...JOB_COMPLETION_INDEX.../%d\"", script, s.Completions)
	}
	mounts := map[string]bool{}
	for _, vm := range c.VolumeMounts {
		mounts[vm.MountPath] = true
	}
	for k := range s.Completions {
		cmd := exec.Command("/bin/sh", "-c", strings.Replace(script, "exec kvharness", "echo", 1))
		cmd.Env = append(os.Environ(), fmt.Sprintf("JOB_COMPLETION_INDEX=%d", k))
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("the pod's command with JOB_COMPLETION_INDEX=%d: %v", k, err)
		}
		want := fmt.Sprintf("--shard %d/%d --strict --resume --out /results/shard-%d", k+1, s.Completions, k+1)
		if !strings.Contains(string(out), want) {
			t.Errorf("pod %d runs %q; want it to contain %q", k, out, want)
		}
	}
	if !mounts["/results"] {
		t.Errorf("no volume at /results, where the shards write (mounts %v)", mounts)
	}
}
