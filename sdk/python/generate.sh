#!/bin/sh
# Regenerates the Python stubs under uaxai_plugin/_pb from the protocol
# (sdk/internal/pb/uaxai/v2/plugin.proto, the one source of truth) and the
# kit's own protos (proto/: gRPC health, go-plugin's controller and
# stdio). The stubs are committed, so a plugin needs no code generator.
#
# Needs protoc and grpc_python_plugin (Debian: protobuf-compiler and
# protobuf-compiler-grpc). The generated code must match the runtime the
# kit targets: Debian 12's python3-protobuf 3.21 (4.21.x in Python) and
# python3-grpcio 1.51; regenerate with the same protoc release.
#
# The protos are copied to uaxai_plugin/_pb/ in a scratch tree first, so
# that the generated modules import each other as uaxai_plugin._pb.*
# (not as uaxai.v2 or grpc.health.v1, which would shadow grpcio).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
plugin=$(command -v grpc_python_plugin) || {
  echo "generate.sh: grpc_python_plugin not found (apt-get install protobuf-compiler-grpc)" >&2
  exit 1
}
command -v protoc >/dev/null || {
  echo "generate.sh: protoc not found (apt-get install protobuf-compiler)" >&2
  exit 1
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/uaxai_plugin/_pb"
cp "$root/sdk/internal/pb/uaxai/v2/plugin.proto" "$here/proto/health.proto" "$here/proto/goplugin.proto" "$tmp/uaxai_plugin/_pb/"
rm -f "$here"/uaxai_plugin/_pb/*_pb2.py "$here"/uaxai_plugin/_pb/*_pb2_grpc.py
protoc -I "$tmp" -I /usr/include \
  --python_out="$here" \
  --grpc_python_out="$here" \
  --plugin=protoc-gen-grpc_python="$plugin" \
  "$tmp"/uaxai_plugin/_pb/*.proto
echo "generated with $(protoc --version) and grpc_python_plugin from $(dpkg-query -W -f '${Version}' protobuf-compiler-grpc 2>/dev/null || echo '?')"
