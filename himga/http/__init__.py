"""himga over HTTP: the gRPC port's services spoken with the Connect protocol (JSON and binary)
and gRPC-Web, the OpenAPI document of them, and the memory browser page.

It re-implements no RPC: a door over the core (himga.core), as the gRPC port is. `handlers`
fills each call's CallContext (token, peer, the deadline of `Connect-Timeout-Ms` or
`grpc-timeout`, whether the client is still connected) and hands the request's bytes to the
core, so both ports share the namespaces, the stores, the rights, the limits and the one error
table; `grpc_web` refuses broken gRPC-Web framing; `fastjson` decodes JSON bodies; `hosts`
keeps the port to the Host names it is reached by (DNS rebinding), `timeouts` reads the timeout
headers by their protocols' rules, and `refusals` writes Connect's error JSON for a request
refused before connect-python reads it."""
