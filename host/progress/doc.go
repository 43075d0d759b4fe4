// Package progress shows the progress of long work: a redrawn bar on a
// terminal, and plain lines (at most one every few seconds, plus stage
// changes) when the output is a file or a pipe.
package progress
