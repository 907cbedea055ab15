"""The transport-neutral core: every call of MemoryService and EpisodeService, whatever door it
came through (gRPC, HTTP's Connect and gRPC-Web, MCP, or a caller in the same process), is
answered here the same way. A door decodes nothing it need not, fills a `CallContext`, calls
`Core.call`, and writes the answer or the error; nothing else. Its modules live in
`himga.service.core` (below the doors, beside the stores' registries it opens); this package
is the name doors and other callers import it by.

The API (kept stable; doors depend on it):

- `CallContext(method, token=None, peer="", deadline=None, active=...)`
  (himga.service.core.context): `method` the full name ("/himga.memory.v1.MemoryService/Ingest");
  `token` the bearer token sent (None: none; `himga.service.auth.bearer_token` reads an
  `authorization` value); `peer` who called, for the log; `deadline` the `time.monotonic()` at
  which the caller stops waiting (None: never; `deadline_after(seconds)` makes one); `active` a
  callable asked live, False once the caller hung up or cancelled. `time_remaining()` and
  `is_active()` are read when asked, not when the call came. The core fills `grant` (the
  caller's identity and rights) once it has checked the token.
- `Core.call(request, context) -> Message`: `request` is the request message, or
  `Encoded(data, decode)` (its bytes and the door's decoder, `protobuf` for the binary form),
  decoded only once the token is known good. It returns the answer message or raises the himga
  error the call ends with; a door writes that error with `himga.service.errors.describe(error)`
  (code, ErrorInfo reason, message, bounded field violations: the one table, `ERROR_KINDS`).
- `Core.methods`: every method served, by full name, with its request and answer classes.
- `Core.calls` (himga.service.lifecycle.Calls): calls in flight, for a stopping server.
- `Core.refusals` (himga.service.core.refusals): the one log policy for refusals, for a door
  that refuses something before the core sees it (a body over the size limit, broken framing).
- `build_core(namespaces, episode_stores, ...)` (himga.service.core.build): a core over the
  stores of one server, with its auth, metrics and limits.

What runs once per call, in this order, for every door: counted in flight (refused with
SERVER_STOPPING once the server stops), the token (UNAUTHENTICATED, PERMISSION_DENIED), the
decoding (INVALID_REQUEST naming the fields, bounded by himga.service.core.bounds), the right
on the namespace, the handler (himga.service.core.memory and .episodes), whose writes commit
only while `context.is_active()` (else rolled back: CALLER_GONE), and the metrics of the outcome.
"""

from himga.service.core.build import build_core
from himga.service.core.context import CallContext, deadline_after
from himga.service.core.core import Core, Encoded, Method, protobuf

__all__ = ["CallContext", "Core", "Encoded", "Method", "build_core", "deadline_after", "protobuf"]
