"""The server driven through the generated stub alone, in a process that never imports himga,
as a client in another language would drive it."""

import subprocess
import sys
from pathlib import Path

CLIENT = Path(__file__).with_name("stub_only_client.py")


def test_a_client_with_only_the_generated_stub(listing_server: str) -> None:
    done = subprocess.run(
        [sys.executable, str(CLIENT), listing_server], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "all checks passed" in done.stdout
