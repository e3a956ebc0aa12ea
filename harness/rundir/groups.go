package rundir

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

const groupsFile = "pgids"

// runMarker is what every process a run started carries in its
// environment: go-plugin points plugins at their socket directory inside
// the run directory, and their children inherit it. Sweeping kills only
// processes carrying the stale run's marker, so a recycled process-group
// id takes down neither an unrelated process nor another run's plugin.
func runMarker(path string) []byte { return []byte("PLUGIN_UNIX_SOCKET_DIR=" + path + "/") }

// RecordGroup notes a plugin's process group so that a later run can kill
// what is left of it if this harness dies without cleaning up.
func (d *Dir) RecordGroup(pgid int) error {
	f, err := os.OpenFile(filepath.Join(d.Path, groupsFile), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = fmt.Fprintln(f, pgid)
	return err
}

func killRecordedGroups(path string) {
	f, err := os.Open(filepath.Join(path, groupsFile))
	if err != nil {
		return
	}
	defer f.Close()
	groups := map[int]bool{}
	s := bufio.NewScanner(f)
	for s.Scan() {
		if pgid, err := strconv.Atoi(s.Text()); err == nil && pgid > 1 {
			groups[pgid] = true
		}
	}
	killMarked(groups, runMarker(path))
}

// killMarked sends SIGKILL to every process in one of groups whose
// environment holds marker, and returns how many it signalled.
func killMarked(groups map[int]bool, marker []byte) int {
	procs, _ := os.ReadDir("/proc")
	killed := 0
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if pg := processGroup(pid); groups[pg] && marked(pid, marker) {
			if unix.Kill(pid, unix.SIGKILL) == nil {
				killed++
			}
		}
	}
	return killed
}

func processGroup(pid int) int {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the parenthesised command: state ppid pgrp ...
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 3 {
		return 0
	}
	pg, _ := strconv.Atoi(f[2])
	return pg
}

func marked(pid int, marker []byte) bool {
	env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	return err == nil && bytes.Contains(env, marker)
}
