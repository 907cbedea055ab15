"""What the memory browser's test and its screenshot command share: a LoCoMo conversation and a
few episodes stored through the public HTTP API, and `drive`, which runs a scenario of
browser.mjs in Debian's Chromium and returns what the page showed."""

import json
import os
import subprocess
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from himga.data.conversation import Sample
from himga.data.locomo import load_locomo

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "tests/fixtures/locomo/locomo-mini.json"
BROWSER = Path(__file__).with_name("browser.mjs")

# The episode the test opens: its tool calls and errors in the order they happened.
ACTIONS = [
    {"t": 0, "action": "read_file", "target": "src/auth.py", "result": "140 lines"},
    {"t": 4, "action": "run_tests", "target": "tests/test_auth.py", "result": "1 failed"},
    {"t": 9, "action": "edit_file", "target": "src/auth.py", "result": "token check fixed"},
]
ERRORS = [
    {
        "type": "test_failure",
        "message": "test_login: expired token accepted",
        "resolution": "compare expiry in UTC",
    },
    {"type": "lint_error", "message": "unused import os", "resolution": ""},
]


def episode(id: str, agent: str, outcome: str, **more: Any) -> dict[str, Any]:
    return {
        "id": id,
        "task_id": "fix-login",
        "timestamp": "2024-05-08T13:56:00Z",
        "agent": agent,
        "context": {"goal": "make expired tokens fail the login", "phase": "ACT"},
        "outcome": outcome,
        **more,
    }


EPISODES = [
    episode("ep-1", "coder", "failure", action_log=ACTIONS, errors_encountered=ERRORS),
    episode("ep-2", "coder", "success", action_log=ACTIONS[:1]),
    episode("ep-3", "reviewer", "failure"),
]


def post(base: str, service: str, method: str, body: object, token: str | None = None) -> Any:
    """A Connect JSON call to the HTTP port at `base`, as the page makes it."""
    headers = {"Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(
        f"{base}/himga.memory.v1.{service}/{method}",
        data=json.dumps(body).encode(),
        headers=headers,
    )
    with urllib.request.urlopen(request) as answer:
        return json.loads(answer.read())


def store_conversation(base: str, namespace: str, token: str | None = None) -> Sample:
    """The first LoCoMo conversation of the fixture, ingested turn by turn; returns it."""
    sample = load_locomo(FIXTURE)[0]
    for session in sample.sessions:
        for message in session.messages:
            body = {
                "namespace": namespace,
                "message": {
                    "role": message.role,
                    "content": message.content,
                    "turn_id": message.turn_id,
                },
                "session": {"session_id": session.session_id, "date_str": session.date_str},
            }
            post(base, "MemoryService", "Ingest", body, token)
    return sample


def store_episodes(base: str, namespace: str) -> None:
    for trace in EPISODES:
        post(base, "EpisodeService", "RecordEpisode", {"namespace": namespace, "episode": trace})


def drive(
    scenario: str,
    url: str,
    namespace: str,
    *args: str,
    width: int | None = None,
    between: Callable[[], None] | None = None,
) -> Any:
    """Runs a scenario of browser.mjs on the page at `url`, in a window `width` CSS pixels wide
    (None: its default); what the page showed. With `between`, the scenario stops once it
    prints "ready", `between()` runs (it stops the server, say), and the scenario goes on."""
    env = {**os.environ, "HIMGA_BROWSER_WIDTH": str(width)} if width else None
    command = ["node", str(BROWSER), scenario, url, namespace, *args]
    if between is None:
        shown = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True)
        assert shown.returncode == 0, shown.stderr
        return json.loads(shown.stdout)
    process = subprocess.Popen(
        command,
        cwd=REPO,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None and process.stdin is not None
    try:
        ready = process.stdout.readline()
        assert ready.strip() == "ready", ready
        between()
        out, err = process.communicate("go\n", timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, err
    return json.loads(out)
