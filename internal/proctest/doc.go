// Package proctest lists the machine's processes from /proc, for tests
// that check that no plugin or model server outlives what started it
// (Linux; elsewhere the list is empty).
//
// The machine's processes from /proc for the tests that check that no
// plugin or model server outlives its caller (List).
package proctest
