#!/usr/bin/env bash
# Regenerates the Go code of the proto under generated/go from proto/. Run through
# `make generate`. The plugins protoc-gen-go and protoc-gen-go-grpc are pinned by the `tool`
# directives of go.mod (go.sum locks them); protoc is the one of the pinned grpcio-tools, so the
# output is byte-for-byte repeatable. Each file carries protoc-gen-go's "DO NOT EDIT" header.
set -euo pipefail
cd "$(dirname "$0")/.."

out=generated/go
module="$(go list -m)"
rm -rf "$out"
mkdir -p "$out"

# Build the plugins at the versions go.mod pins, into a scratch directory for this run.
plugins="$(mktemp -d)"
trap 'rm -rf "$plugins"' EXIT
go build -buildvcs=false -o "$plugins/protoc-gen-go" google.golang.org/protobuf/cmd/protoc-gen-go
go build -buildvcs=false -o "$plugins/protoc-gen-go-grpc" google.golang.org/grpc/cmd/protoc-gen-go-grpc

# The proto's go_package names the import path under this module; module= strips the prefix,
# so the files land at generated/go/himga/memory/v1/.
python -m grpc_tools.protoc -Iproto \
  --plugin=protoc-gen-go="$plugins/protoc-gen-go" \
  --plugin=protoc-gen-go-grpc="$plugins/protoc-gen-go-grpc" \
  --go_out="$out" --go_opt=module="$module/$out" \
  --go-grpc_out="$out" --go-grpc_opt=module="$module/$out" \
  proto/himga_proto/memory/v1/memory.proto proto/himga_proto/memory/v1/options.proto
