package protocol

// Regenerate kvpb from the protocol's .proto files: kvharness.proto (the
// base service) and one file per kernel kind. Needs protoc (Debian:
// protobuf-compiler) and the two Go generators:
//
//	go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
//	go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2
//
//go:generate sh -c "rm -f kvpb/*.pb.go && protoc --go_out=kvpb --go_opt=paths=source_relative --go-grpc_out=kvpb --go-grpc_opt=paths=source_relative *.proto"
