"""`make check-generated` (scripts/check-generated.sh) catches a stale or hand-edited generated/.

It runs in a copy of the repository's tracked files, so the real tree is never touched.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def repo_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tracked files of the repository, as they are in the working tree."""
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.decode()
    copy = tmp_path_factory.mktemp("repo")
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file():  # tracked files deleted in the working tree are left out
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, copy / name)
    # The installed npm tools serve the copy too, as check-generated.sh lends them to its own
    # scratch copy: no `npm ci` (and no network) per run.
    if (ROOT / "node_modules").is_dir():
        (copy / "node_modules").symlink_to(ROOT / "node_modules")
    return copy


def _check_generated(repo: Path) -> subprocess.CompletedProcess[str]:
    # The generators are the ones installed beside this interpreter, as `make` puts them first.
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    return subprocess.run(
        ["bash", "scripts/check-generated.sh"],
        cwd=repo,
        env={**os.environ, "PATH": path},
        capture_output=True,
        text=True,
        check=False,
    )


def _edited(path: Path, old: str, new: str) -> str:
    """Replaces `old` by `new` in a file and returns the original text."""
    original = path.read_text(encoding="utf-8")
    assert old in original
    path.write_text(original.replace(old, new, 1), encoding="utf-8")
    return original


def test_an_untouched_copy_passes(repo_copy: Path) -> None:
    ran = _check_generated(repo_copy)
    assert ran.returncode == 0, ran.stderr


@pytest.mark.parametrize(
    ("file", "old", "new"),
    [
        ("generated/python/himga_schema/message.py", "role:", "speaker:"),
        ("generated/bundled/v1/session.json", '"minLength": 1', '"minLength": 2'),
        ("schemas/v1/message.json", '"minLength": 1', '"minLength": 2'),
    ],
    ids=[
        "hand edit of a generated file",
        "hand edit of a bundled schema",
        "schema changed without regenerating",
    ],
)
def test_check_generated_fails_naming_the_target(
    repo_copy: Path, file: str, old: str, new: str
) -> None:
    original = _edited(repo_copy / file, old, new)
    try:
        ran = _check_generated(repo_copy)
    finally:
        (repo_copy / file).write_text(original, encoding="utf-8")
    assert ran.returncode != 0
    assert "make generate" in ran.stderr
