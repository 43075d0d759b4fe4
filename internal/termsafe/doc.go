// Package termsafe makes text that another program wrote safe to print
// on the user's terminal as one line: a plugin's log lines, errors,
// version and stderr reach the host's output through it, so that a
// plugin cannot move the cursor, erase a line, or print a line that looks
// like the host's own ("uaxai: all good").
//
// Text another program wrote made safe for a terminal line (Escape; Clean
// says whether it has nothing to escape: class names must, host/data's
// checkClassName, and every table cell, title and note of host/report is
// escaped, | in Markdown cells).
package termsafe
