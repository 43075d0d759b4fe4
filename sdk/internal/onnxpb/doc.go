// Package onnxpb is the generated protobuf code of ONNX's model format
// (protobuf package onnx, source onnx.proto of ONNX 1.12.0, Apache-2.0;
// see the header of onnx.proto). Only messages: ONNX defines no service.
// It is internal to the sdk: package sdk/onnx reads it and exposes plain
// Go types, no generated type appears in a public signature.
//
// The generated file is committed, so a build needs no protoc. To
// regenerate, with protoc (Debian: protobuf-compiler) and protoc-gen-go
// (go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12) on
// PATH, run go generate in this directory:
//
//go:generate protoc --proto_path=. --go_out=. --go_opt=module=github.com/uaxai/uaxai/sdk/internal/onnxpb onnx.proto
package onnxpb
