// Package filelock holds exclusive locks on files with flock(2): the
// kernel releases a lock when the process that holds it ends, however it
// ends (SIGKILL, a power cut of the machine that held it), so a lock never
// outlives a dead holder. On NFS, Linux turns flock into a POSIX lock that
// the server sees, so processes on several machines exclude each other.
//
// flock(2) locks that die with their holder (SIGKILL, a lost machine),
// across machines on NFS.
package filelock
