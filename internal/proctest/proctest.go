package proctest

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Proc is one process of /proc.
type Proc struct {
	Pid, PPid, PGrp int
	State           string // /proc/PID/stat's state: R, S, Z (zombie), X (dead), ...
	Cmdline         string // its arguments joined by spaces
}

// Live reports whether p is neither a zombie nor dead.
func (p Proc) Live() bool { return p.State != "Z" && p.State != "X" }

// List returns every process that /proc shows, zombies included; a
// process that ends while it is read is left out.
func List() []Proc {
	ents, _ := os.ReadDir("/proc")
	var out []Proc
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...: comm may hold spaces and ')'.
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(f) < 3 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		pgrp, _ := strconv.Atoi(f[2])
		cl, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		out = append(out, Proc{Pid: pid, PPid: ppid, PGrp: pgrp, State: f[0], Cmdline: strings.ReplaceAll(string(cl), "\x00", " ")})
	}
	return out
}
