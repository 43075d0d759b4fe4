// Package atomicfile writes files so that a reader never sees a partial
// one: the bytes go to a temporary file in the target's directory, which is
// synced, given mode 0644 and only then renamed into place. It serves the
// host (run directories, datasets) and the sdk (safetensors) alike.
//
// It is also the one way the host opens a file it reads (read.go):
// OpenRegular and ReadRegular refuse, without blocking, a path that is not
// a regular file (a FIFO, a device such as /dev/zero, a directory), and a
// file larger than the bound its reader passes, before a byte of it is
// read. A test (TestReadersUseTheHelper) walks the module's source and
// fails on any other os.Open, os.ReadFile or the like outside an explicit
// allow-list.
//
// Atomic file writes, and the one way the host opens a file it reads
// (OpenRegular, ReadRegular with a Limit: see "Input files" under the
// trust model).
//
// # Input files
//
//   - Input files. Every file the host reads by path is opened by one
//     helper, internal/atomicfile.OpenRegular / ReadRegular: graph specs,
//     ONNX models, safetensors weights (--weights, posterior.files),
//     datasets (CSV, .npy, safetensors, classes.txt), the inputs of
//     explain/predict, recordings (COMTRADE cfg/dat/inf/cff, WAV, CSV),
//     recipes, summary scripts, plugin manifests and the #! heads of
//     plugin commands, and the run directory's own files. It takes regular
//     files only, refused without blocking and without reading: it Stats
//     the path (so that a device such as /dev/zero is never opened), opens
//     it O_NONBLOCK (so that a FIFO swapped in cannot block the open; on a
//     regular file the flag changes nothing) and Fstats the open file. The
//     error is open PATH: not a regular file (it is a FIFO; accepted: a
//     regular file). Each reader passes the bound of its kind of file (an
//     atomicfile.Limit, defined beside its format: graph.MaxSpecBytes,
//     onnx.MaxFileBytes, safetensors.MaxFileBytes, npy.MaxFileBytes,
//     data.MaxCSVBytes, record.MaxFileBytes, recipe.MaxRecipeSize,
//     script.MaxSourceBytes, plugin.MaxManifestBytes), checked against the
//     file's size before a byte is read and again as it reads (a file that
//     grows is read no further than the bound and one byte); the error
//     names the file, its size, the bound and the flag or [limits] key
//     that raises it, or says that none does. A reader that streams a file
//     without holding it (a digest, a copy, a #! line) or reads the run's
//     own files passes atomicfile.AnySize. atomicfile's
//     TestReadersUseTheHelper walks the source of cmd, host, internal,
//     plugins and sdk and fails on any os.Open, os.OpenFile, os.ReadFile,
//     toml.DecodeFile and the like outside an allow-list whose every entry
//     says why it is not an input file (kernel pseudo-files under /proc
//     and /sys/fs/cgroup, lock files, a directory synced, the golden files
//     of tests).
//
// # Tests
//
//   - Hostile input files: host/runner TestInputFilesRefused (every reader
//     of an input file given /dev/zero, a FIFO, a directory, and a sparse
//     file one byte over its bound), cmd/uaxai TestHostileInputFiles (the
//     same through predict, explain and recipe check, each run of the
//     binary under a minute's deadline and a 1 GiB data limit), and
//     internal/atomicfile TestReadersUseTheHelper (no other opener in the
//     source).
package atomicfile
