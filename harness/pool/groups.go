package pool

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

// PluginEnvMarker is an environment variable every plugin process inherits
// (go-plugin's magic cookie). Sweeping kills only processes carrying it, so
// a recycled process-group id never takes an unrelated process down.
var PluginEnvMarker = "KVHARNESS_PLUGIN_COOKIE="

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
	KillMarked(groups)
}

// KillMarked sends SIGKILL to every process in one of groups that carries
// PluginEnvMarker, and returns how many it signalled.
func KillMarked(groups map[int]bool) int {
	procs, _ := os.ReadDir("/proc")
	killed := 0
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if pg := processGroup(pid); groups[pg] && marked(pid) {
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

func marked(pid int) bool {
	env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	return err == nil && bytes.Contains(env, []byte(PluginEnvMarker))
}
