"""Connect's error JSON for a request the HTTP port refuses before connect-python reads it: the
same body connect-python writes for a handler's error (code, message, details), under the
HTTP status the refusal calls for."""

from collections.abc import Callable, Iterable
from typing import Any

from connectrpc._protocol import ConnectWireError
from connectrpc.errors import ConnectError


def refuse(
    error: ConnectError,
    start_response: Callable[..., Any],
    status: str | None = None,
    headers: Iterable[tuple[str, str]] = (),
) -> Iterable[bytes]:
    """Answer `error` as Connect's error JSON, under `status` ("421 Misdirected Request"; by
    default the one Connect gives its code), with `headers` too."""
    wire = ConnectWireError.from_exception(error)
    if status is None:
        found = wire.to_http_status()
        status = f"{found.code} {found.reason}"
    body = wire.to_json_bytes()
    start_response(
        status,
        [
            ("Content-Type", "application/json"),
            ("Content-Length", str(len(body))),
            *headers,
        ],
    )
    return [body]
