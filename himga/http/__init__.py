"""himga over HTTP: the gRPC port's services spoken with the Connect protocol (JSON and binary)
and gRPC-Web, the OpenAPI document of them, and the memory browser page.

It re-implements no RPC: `dispatch` hands each decoded request to the gRPC server's own
interceptor chain (auth, calls in flight, metrics, decoding) and servicer objects, so both ports
share the namespaces, the stores, the rights and the error mapping."""
