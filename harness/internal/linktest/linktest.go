// Package linktest sets the trap that tests of an output folder share: an
// output name that is a symbolic link to a file the command must neither
// follow nor change.
package linktest

import (
	"os"
	"path/filepath"
	"testing"
)

// Kept is what the linked-to file holds; a test checks it still does.
const Kept = "keep"

// Out makes, in a fresh temporary folder, an output folder "night" whose
// entry name is a symbolic link to a file "victim" holding Kept, and
// returns the output folder and the victim's path.
func Out(t testing.TB, name string) (out, victim string) {
	t.Helper()
	dir := t.TempDir()
	out = filepath.Join(dir, "night")
	victim = filepath.Join(dir, "victim")
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(victim, []byte(Kept), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(out, name)); err != nil {
		t.Fatal(err)
	}
	return out, victim
}
