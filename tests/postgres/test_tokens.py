"""Tokens kept in the database: made and revoked with `himga auth ... --database URL`, accepted
and refused by every server over it (`--database-tokens`) soon after, without a signal."""

import subprocess
import sys
import time

from himga.data import Message, Session
from himga.service import RemoteMemory
from himga.service.errors import Unauthenticated
from tests.postgres.servers import several
from tests.postgres_cluster import Postgres


def auth(url: str, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "himga", "auth", *args, "--database", url],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def works(target: str, token: str) -> bool:
    memory = RemoteMemory(target, "tokens-ns", token=token, timeout=10)
    try:
        memory.store([(Message(role="Ada", content="kayak", turn_id="t"), Session(session_id="s"))])
        return True
    except Unauthenticated:
        return False
    finally:
        memory.close()


def test_a_token_revoked_through_the_database_is_refused_by_every_server(
    postgres: Postgres,
) -> None:
    url = postgres.url
    token = auth(url, "new-token", "--namespace", "tokens-*", "--rights", "read,write")
    token_id = token.split(".")[1]
    assert token_id in auth(url, "list")
    assert token not in auth(url, "list")  # never the secret
    with several(url, 2, "--database-tokens") as servers:
        assert not works(servers[0].target, "himga.00000000." + "x" * 43)
        for server in servers:
            assert works(server.target, token)
        auth(url, "revoke", token_id)
        start = time.monotonic()
        for server in servers:
            while works(server.target, token):
                assert time.monotonic() - start < 30, "a revoked token still works"
                time.sleep(0.2)
        # A token made while the servers run is taken without a restart.
        fresh = auth(url, "new-token", "--namespace", "*", "--rights", "write")
        for server in servers:
            deadline = time.monotonic() + 30
            while not works(server.target, fresh):
                assert time.monotonic() < deadline, "a new token was not taken"
                time.sleep(0.2)


def test_database_tokens_need_a_database() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "himga", "serve", "--port", "0", "--database-tokens"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "--database-tokens needs --database" in done.stderr


def test_a_reachable_server_over_a_database_needs_tokens(postgres: Postgres) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "himga", "serve", "--host", "0.0.0.0", "--port", "0", "--database",
         postgres.url],
        capture_output=True,
        text=True,
        timeout=60,
    )  # fmt: skip
    assert done.returncode == 2
    assert "--database-tokens" in done.stderr
