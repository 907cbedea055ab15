// Command nullserver is the smallest MemoryService in Go: a NullMemory that stores nothing,
// recalls nothing and checks nothing. It answers every call with success (each message's id, a
// delete of nothing, an empty listing), which keeps the contracts a memory that stores nothing
// can keep, and breaks the ones about malformed requests; `himga conformance` shows which
// (tests/conformance/ asserts the exact table).
//
//	go run ./examples/go/nullserver -addr 127.0.0.1:50052
//	himga conformance --target 127.0.0.1:50052
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"syscall"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	memoryv1 "himga.dev/himga/generated/go/himga/memory/v1"
)

// nullMemory implements the generated MemoryService by forgetting everything at once.
type nullMemory struct {
	memoryv1.UnimplementedMemoryServiceServer
}

func (nullMemory) Ingest(_ context.Context, req *memoryv1.IngestRequest) (*memoryv1.IngestResponse, error) {
	return &memoryv1.IngestResponse{Id: messageID(req.GetMessage())}, nil
}

func (nullMemory) IngestBatch(_ context.Context, req *memoryv1.IngestBatchRequest) (*memoryv1.IngestBatchResponse, error) {
	ids := make([]string, len(req.GetItems()))
	for i, item := range req.GetItems() {
		ids[i] = messageID(item.GetMessage())
	}
	return &memoryv1.IngestBatchResponse{Ingested: uint32(len(ids)), Ids: ids}, nil
}

// messageID is the id a message is stored under: its turn_id, or a new random one.
func messageID(message *memoryv1.Message) string {
	if id := message.GetTurnId(); id != "" {
		return id
	}
	made := make([]byte, 16)
	if _, err := rand.Read(made); err != nil {
		log.Fatal(err)
	}
	return hex.EncodeToString(made)
}

func (nullMemory) Delete(context.Context, *memoryv1.DeleteRequest) (*memoryv1.DeleteResponse, error) {
	return &memoryv1.DeleteResponse{}, nil
}

func (nullMemory) ListMessages(context.Context, *memoryv1.ListMessagesRequest) (*memoryv1.ListMessagesResponse, error) {
	return &memoryv1.ListMessagesResponse{}, nil
}

// ListNamespaces lists nothing: a memory that stores nothing holds no namespace.
func (nullMemory) ListNamespaces(context.Context, *memoryv1.ListNamespacesRequest) (*memoryv1.ListNamespacesResponse, error) {
	return &memoryv1.ListNamespacesResponse{}, nil
}

// DeleteNamespace deletes nothing, and says the namespace was not held.
func (nullMemory) DeleteNamespace(context.Context, *memoryv1.DeleteNamespaceRequest) (*memoryv1.DeleteNamespaceResponse, error) {
	return &memoryv1.DeleteNamespaceResponse{}, nil
}

func (nullMemory) Retrieve(context.Context, *memoryv1.RetrieveRequest) (*memoryv1.RetrieveResponse, error) {
	return &memoryv1.RetrieveResponse{}, nil
}

func (nullMemory) Reset(context.Context, *memoryv1.ResetRequest) (*memoryv1.ResetResponse, error) {
	return &memoryv1.ResetResponse{}, nil
}

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "where to listen, HOST:PORT (port 0: a free one)")
	flag.Parse()
	listener, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	server := grpc.NewServer()
	memoryv1.RegisterMemoryServiceServer(server, nullMemory{})
	healthServer := health.NewServer()
	healthServer.SetServingStatus(memoryv1.MemoryService_ServiceDesc.ServiceName, healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(server, healthServer)

	// The same line as `himga serve`, so that a test or a script can read the port.
	fmt.Fprintf(os.Stderr, "listening on %s\n", listener.Addr())
	go func() {
		signals := make(chan os.Signal, 1)
		signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
		<-signals
		server.GracefulStop()
	}()
	if err := server.Serve(listener); err != nil {
		log.Fatal(err)
	}
}
