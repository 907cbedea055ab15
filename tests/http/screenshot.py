"""`make screenshot-browser`: screenshots of the memory browser, as a person sees it, in windows
400, 800 and 1400 CSS pixels wide (a phone, a half screen, a desktop).

Serves a memory in this process with its HTTP port, stores the first conversation of the LoCoMo
fixture and the test's episodes through the public HTTP API, then has Debian's Chromium (driven
by playwright-core, as tests/http/test_browser.py does) search the conversation for its first
question, list its messages and the episodes, open episode ep-1 as a timeline, and save the
whole page as a PNG for each width: `memory-browser.png` gives `memory-browser-400.png`, ..."""

import argparse
import sys
from pathlib import Path

from himga.service.server import create_server
from tests.http.browsing import drive, store_conversation, store_episodes

NAMESPACE = "locomo"
WIDTHS = (400, 800, 1400)


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
        made = []
        for width in WIDTHS:
            png = args.png.with_name(f"{args.png.stem}-{width}{args.png.suffix or '.png'}")
            drive(
                "screenshot",
                base + "/",
                NAMESPACE,
                question,
                "ep-1",
                str(png.resolve()),
                width=width,
            )
            made.append(png)
    finally:
        server.stop(0).wait()
    for png in made:
        print(f"{png}: the memory browser after searching {question!r} and opening ep-1")
    return 0


if __name__ == "__main__":
    sys.exit(main())
