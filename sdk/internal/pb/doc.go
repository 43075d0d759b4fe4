// Package pb is the generated protobuf and gRPC code of the uaxai plugin
// protocol (protobuf package uaxai.v2, source uaxai/v2/plugin.proto). It
// is internal to the sdk: no generated type appears in a public signature;
// package sdk converts to and from its own types.
//
// Fields are only added; a change an older peer would misread bumps
// proto.Version and the package. gRPC servers and clients raise the
// message limit to 1 GiB. Nothing is printed to stdout before Serve;
// plugins log JSON to stderr through hclog, which the host re-levels into
// its own log.
//
// The generated files are committed, so a build needs no protoc. To
// regenerate after editing the .proto, with protoc (Debian:
// protobuf-compiler), protoc-gen-go and protoc-gen-go-grpc on PATH
// (go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
// google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2), run go generate
// in this directory:
//
//go:generate protoc --proto_path=. --go_out=. --go_opt=module=github.com/uaxai/uaxai/sdk/internal/pb --go-grpc_out=. --go-grpc_opt=module=github.com/uaxai/uaxai/sdk/internal/pb uaxai/v2/plugin.proto
package pb
