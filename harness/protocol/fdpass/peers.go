package fdpass

import (
	"fmt"
	"net"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// Who may receive. A socket in a private directory keeps other users out,
// not other processes of the same user: a plugin could connect to every
// socket of the run directory and map every arena. So each connection's
// peer is identified by the kernel (SO_PEERCRED) and served only when it
// is this process (a plugin linked in) or runs in the process group of a
// live plugin the harness started that Grant named: the plugins the arena
// was given to. An arena no plugin was given is refused to all. Every plugin runs in a process group of its
// own, which only the harness starts; a process cannot join a group of
// another session, and the plugins' group ids are not reused while they
// live.

// groups are the process groups of the live plugins this process started.
var groups = struct {
	sync.Mutex
	live map[int]bool
}{live: map[int]bool{}}

// servers are the live servers by socket path, for Grant.
var servers = struct {
	sync.Mutex
	byPath map[string]*Server
}{byPath: map[string]*Server{}}

// PluginStarted notes the process group of a plugin this process started:
// its processes may receive descriptors.
func PluginStarted(pgid int) {
	groups.Lock()
	groups.live[pgid] = true
	groups.Unlock()
}

// PluginExited forgets a plugin's process group, and every grant to it:
// the id may be reused by an unrelated process.
func PluginExited(pgid int) {
	groups.Lock()
	delete(groups.live, pgid)
	groups.Unlock()
	servers.Lock()
	defer servers.Unlock()
	for _, s := range servers.byPath {
		s.mu.Lock()
		delete(s.granted, pgid)
		s.mu.Unlock()
	}
}

// Grant lets the live plugin whose process group is pgid receive the
// descriptor served at path; once an arena has been granted, other
// plugins of this harness are refused it. A path no server of this
// process serves is left alone (a file, a socket of another kind).
func Grant(path string, pgid int) {
	servers.Lock()
	s := servers.byPath[path]
	servers.Unlock()
	groups.Lock()
	live := groups.live[pgid]
	groups.Unlock()
	if s == nil || !live { // a plugin that exited already: its group id may be anyone's next
		return
	}
	s.mu.Lock()
	s.granted[pgid] = true
	s.mu.Unlock()
}

// allowed says whether the process at the other end of c may receive, and
// why not when it may not.
func (s *Server) allowed(c *net.UnixConn) error {
	raw, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return err
	}
	if cerr != nil {
		return fmt.Errorf("identify the process asking: %w", cerr)
	}
	if int(cred.Pid) == os.Getpid() {
		return nil // a plugin linked into the harness
	}
	pgid, err := unix.Getpgid(int(cred.Pid))
	if err != nil {
		return fmt.Errorf("process %d asking is gone", cred.Pid)
	}
	groups.Lock()
	plugin := groups.live[pgid]
	groups.Unlock()
	s.mu.Lock()
	granted := s.granted[pgid]
	s.mu.Unlock()
	switch {
	case !plugin:
		return fmt.Errorf("process %d is no plugin this harness started: only the plugin an arena was given to receives it", cred.Pid)
	case !granted:
		return fmt.Errorf("process %d belongs to a plugin this arena was not given to: a plugin receives only the arenas of its own attach", cred.Pid)
	}
	return nil
}
