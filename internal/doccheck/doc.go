// Package doccheck holds the documentation's tests, and no code: every
// relative link of README.md, ARCHITECTURE.md, the other top-level
// Markdown files and docs/ resolves to a file or directory of the
// repository, and every #anchor to a heading of the file it names, by
// GitHub's slug rules; README.md stays under 200 lines and
// ARCHITECTURE.md under 300 (issue 35), so that they stay a newcomer's
// read and the details live in docs/ and each package's doc.go.
package doccheck
