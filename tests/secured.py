"""A server set up as the README's "Running it where others can reach it" says: a token needed
(an auth file holding one) and TLS only, mutual (clients present a certificate of the tests'
CA): what the client commands' TLS and token options are tested against."""

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from himga.service import create_server, tokens
from himga.service.auth import AuthFile
from himga.service.credentials import ServerTls
from himga.service.server import MemoryServer
from tests.certificates import Certificates


@contextmanager
def secured_server(
    certificates: Certificates,
    folder: Path,
    namespaces: Sequence[str],
    rights: Sequence[str],
    **options: Any,
) -> Iterator[tuple[MemoryServer, int, str]]:
    """A started server (`create_server` `options`), its gRPC port, and a token of `rights`
    on `namespaces` from its auth file (kept in `folder`); stopped on leaving."""
    held = tokens.Tokens()
    token, _ = held.new(list(namespaces), list(rights))
    tokens.save(folder / "auth.json", held)
    server, port = create_server(
        "127.0.0.1:0",
        auth=AuthFile(folder / "auth.json"),
        tls=ServerTls(certificates.server.cert, certificates.server.key, certificates.ca),
        **options,
    )
    try:
        yield server, port, token
    finally:
        server.stop(None).wait()
