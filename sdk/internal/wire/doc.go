// Package wire converts between the Go values of the sdk and the byte
// encodings of the uaxai.v1 protocol (package pb): little-endian float
// arrays, JSON configs and model draws. It imports no sdk package but nn,
// so that package sdk can use it.
//
// What both protocol sides share: byte encodings (LoadParams: a draw as a
// Load sends it, with its layers' output shapes), the request checks, the
// handshake and in-process serving for tests (proto.InProcess).
package wire
