package main

import (
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/kvharness/kvharness/harness/internal/textsafe"
)

// folderWatch notes what a folder held when a run began, so that the run
// can name the files that appeared or changed in it that the harness did
// not write itself: a plugin can write anywhere its user may, and a file
// planted among the repro files would be replayed as one of them.
type folderWatch struct {
	dir    string
	before map[string]stamp
}

type stamp struct {
	size int64
	mod  time.Time
	ino  uint64
}

// watchFolder notes dir's files now (none when it does not exist yet).
func watchFolder(dir string) *folderWatch {
	return &folderWatch{dir: dir, before: stamps(dir)}
}

func stamps(dir string) map[string]stamp {
	out := map[string]stamp{}
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if info, err := d.Info(); err == nil {
			s := stamp{size: info.Size(), mod: info.ModTime()}
			if st, ok := info.Sys().(*syscall.Stat_t); ok {
				s.ino = st.Ino
			}
			out[path] = s
		}
		return nil
	})
	return out
}

// strangers are the files that appeared or changed in the folder since
// watchFolder, other than ours (paths the run wrote) and those under the
// folders in ourDirs (written for the run by a tool it ran, such as a
// sanitizer's logs); their names are escaped for printing.
func (w *folderWatch) strangers(ours []string, ourDirs ...string) []string {
	var out []string
	for path, now := range stamps(w.dir) {
		if was, ok := w.before[path]; ok && was == now || slices.Contains(ours, path) || under(path, ourDirs) {
			continue
		}
		out = append(out, textsafe.String(path))
	}
	slices.Sort(out)
	return out
}

func under(path string, dirs []string) bool {
	for _, d := range dirs {
		if rel, err := filepath.Rel(d, path); err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, "../") {
			return true
		}
	}
	return false
}
