package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"
)

// flagLine is one flag in a command's --help: its name, its value's type
// (empty for a switch) and its usage.
var flagLine = regexp.MustCompile(`^\s+(?:-\w, )?--([\w-]+)(?:\[=[^\]]*\])?(?: (\w+))?\s{2,}(.*)$`)

// helpFlags reads every flag of every command from its --help: name →
// command → type.
func helpFlags(t *testing.T) map[string]map[string]string {
	t.Helper()
	all := map[string]map[string]string{}
	for _, name := range commandNames(true) {
		var out, errOut bytes.Buffer
		if code := run(context.Background(), &out, &errOut, []string{"help", name}); code != exitPass {
			t.Fatalf("help %s: exit %d: %s", name, code, &errOut)
		}
		for _, line := range strings.Split(out.String(), "\n") {
			m := flagLine.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			if all[m[1]] == nil {
				all[m[1]] = map[string]string{}
			}
			all[m[1]][name] = kindOf(m[2], m[3])
			if (m[2] == "float" || m[2] == "int") && regexp.MustCompile(`\bseconds\b`).MatchString(m[3]) {
				t.Errorf("%s --%s takes a number of seconds (%q); durations take units everywhere (time.Duration)", name, m[1], m[3])
			}
		}
	}
	return all
}

// kindOf is a flag's value type with one and many made one (a --plugin
// that takes one plugin and a --plugin that takes several mean the same).
func kindOf(typ, usage string) string {
	switch {
	case typ == "":
		return "switch"
	case strings.HasSuffix(typ, "s") && typ != "strings":
		return strings.TrimSuffix(typ, "s")
	case typ == "strings":
		return "string"
	}
	return typ
}

// TestOneMeaningPerFlagName: a flag name takes one type of value in every
// command that has it (--timeout is a plugin call's deadline, a duration,
// in check, repro and bench alike), and every flag of time is a duration.
func TestOneMeaningPerFlagName(t *testing.T) {
	all := helpFlags(t)
	if len(all) < 40 {
		t.Fatalf("read %d flags from the commands' help; the help format changed", len(all))
	}
	for name, byCmd := range all {
		seen := ""
		for cmd, typ := range byCmd {
			if seen == "" {
				seen = typ
				continue
			}
			if typ != seen {
				t.Errorf("--%s takes a %s in one command and a %s in %s: %v", name, seen, typ, cmd, byCmd)
			}
		}
	}
	for _, cmd := range []string{"check", "repro", "bench"} {
		if all["timeout"][cmd] != "duration" {
			t.Errorf("%s --timeout is a %q; want the plugin call's deadline, a duration", cmd, all["timeout"][cmd])
		}
	}
	if all["mode"]["fuzz"] != "" {
		t.Errorf("fuzz has --mode beside bench's (eager, graph); its lanes are --lane")
	}
}
