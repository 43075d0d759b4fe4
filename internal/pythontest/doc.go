// Package pythontest lets a Go test run the Python plugins
// (sdk/python/uaxai_plugin and plugins/explainer/python-*): Need skips
// the test unless Debian's python3 has the kit's modules. The host and
// the conformance kit find that interpreter themselves (internal/pyinterp
// tries it after the first python3 on PATH), so Need leaves PATH alone;
// BareShim puts a python3 without the modules first on PATH, to show
// that they look past it.
//
// The test helper that skips unless /usr/bin/python3 can run the Python
// plugins (Need: the host and the conformance kit find it themselves, PATH
// is left alone; BareShim puts a python3 without the packages,
// /usr/bin/python3 -I -S, first on PATH).
package pythontest
