"""Generated protobuf and gRPC stubs. Do not edit: run plugins/python/gen.sh."""
