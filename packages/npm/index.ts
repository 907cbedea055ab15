// The npm package himga-memory: the TypeScript client (MemoryService and EpisodeService over
// gRPC), the schema validator (ajv, the shipped schemas/v1), the schema types and the generated
// proto messages. scripts/npm-package.sh builds and packs it; tests/packaging installs the
// tarball into a new project that compiles and calls a server.
export * from "../../examples/typescript/memory.js";
export * from "../../examples/typescript/episodes.js";
export * from "../../examples/typescript/schemas.js";
// The schemas' document types (Message, Session, EpisodeTrace, ...), as tsc makes them.
export type * from "../../generated/typescript/schema/v1.js";
// The proto messages and services, under `pb` (their names overlap the documents').
export * as pb from "../../generated/typescript/himga_proto/memory/v1/memory_pb.js";
