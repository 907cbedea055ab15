"""The memory browser in a real browser (headless Chromium through playwright-core): a LoCoMo
conversation ingested over HTTP is searched in the page, which shows the evidence turn and the
context string; deleting a session in the page removes it from the memory."""

import json
import subprocess
import urllib.request
from pathlib import Path

from himga.data.locomo import load_locomo
from himga.service.server import create_server

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "tests/fixtures/locomo/locomo-mini.json"


def post(base: str, method: str, body: object) -> object:
    request = urllib.request.Request(
        f"{base}/himga.memory.v1.MemoryService/{method}",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request) as answer:
        return json.loads(answer.read())


def test_search_and_delete_a_session_in_the_page(tmp_path: Path) -> None:
    sample = load_locomo(FIXTURE)[0]
    question = sample.qa_pairs[0]
    server, _ = create_server("127.0.0.1:0", memory="keyword", http_address=("127.0.0.1", 0))
    base = f"http://127.0.0.1:{server.http_port}"
    try:
        for session in sample.sessions:
            for message in session.messages:
                body = {
                    "namespace": "locomo",
                    "message": {
                        "role": message.role,
                        "content": message.content,
                        "turn_id": message.turn_id,
                    },
                    "session": {"session_id": session.session_id, "date_str": session.date_str},
                }
                post(base, "Ingest", body)
        gone = sample.sessions[-1].session_id
        shown = subprocess.run(
            [
                "node",
                str(REPO / "tests/http/browser.mjs"),
                base + "/",
                "locomo",
                question.question,
                gone,
                str(tmp_path / "page.png"),
            ],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=True,
        )
        seen = json.loads(shown.stdout)
        assert set(question.evidence) & set(seen["hits"]), seen["hits"]
        assert seen["context"].strip()
        assert gone in seen["before"] and gone not in seen["after"]
        left = post(base, "ListMessages", {"namespace": "locomo", "page_size": 1000})
        assert isinstance(left, dict)
        assert all(m["session"]["session_id"] != gone for m in left["messages"])
        assert (tmp_path / "page.png").stat().st_size > 0
    finally:
        server.stop(0).wait()
