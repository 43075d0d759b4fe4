// Package rundir keeps the units of a run in its run directory: each
// finished unit's output as units/<name>.unit, written atomically,
// checksummed and holding its own name, the lock a process holds while it works on a unit
// (units/<name>.lock, internal/filelock), and the list of the run's units
// (units/plan.json). Several processes, on several machines sharing the
// directory, may use it at once.
//
// A run directory's units: units/<name>.unit (atomic, SHA-256 checked,
// holding its own name; a file cut short, another unit's file or a FIFO is
// ErrCorrupt), their flock'd lock files, units/plan.json, and each unit's
// state (done, running, missing, corrupt).
package rundir
