"""`make screenshot-browser`: a screenshot of the memory browser, as a person sees it.

Serves a memory in this process with its HTTP port, stores the first conversation of the LoCoMo
fixture and the test's episodes through the public HTTP API, then has Debian's Chromium (driven
by playwright-core, as tests/http/test_browser.py does) search the conversation for its first
question, list its messages and the episodes, open episode ep-1 as a timeline, and save the
whole page as a PNG."""

import argparse
import sys
from pathlib import Path

from himga.service.server import create_server
from tests.http.browsing import drive, store_conversation, store_episodes

NAMESPACE = "locomo"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("png", nargs="?", default="memory-browser.png", type=Path)
    args = parser.parse_args()
    server, _ = create_server("127.0.0.1:0", memory="keyword", http_address=("127.0.0.1", 0))
    try:
        base = f"http://127.0.0.1:{server.http_port}"
        sample = store_conversation(base, NAMESPACE)
        store_episodes(base, NAMESPACE)
        question = sample.qa_pairs[0].question
        drive("screenshot", base + "/", NAMESPACE, question, "ep-1", str(args.png.resolve()))
    finally:
        server.stop(0).wait()
    print(f"{args.png}: the memory browser after searching {question!r} and opening ep-1")
    return 0


if __name__ == "__main__":
    sys.exit(main())
