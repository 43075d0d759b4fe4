// Package proto holds what the two sides of the uaxai plugin protocol
// share besides the generated code: the go-plugin handshake, the message
// size limit, and the hook through which sdktest serves a plugin inside a
// test process.
package proto
