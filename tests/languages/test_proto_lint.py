"""scripts/lint-proto.sh: the proto passes `buf lint` (buf.yaml's rules), and the script fails on
a rule broken or, once a release is tagged (or v0.1.0's commit is in the history), on a change
that would break v1 clients."""

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PROTO = Path("proto/himga_proto/memory/v1/memory.proto")


def _lint(cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "scripts/lint-proto.sh"],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        check=False,
    )


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=test", "-c", "user.email=test@example.com", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


@pytest.fixture(scope="module")
def repo_lint() -> subprocess.CompletedProcess[str]:
    """The script run on the repository (which installs node_modules, buf's home, if needed)."""
    return _lint(REPO)


def test_the_proto_passes_buf_lint(repo_lint: subprocess.CompletedProcess[str]) -> None:
    assert repo_lint.returncode == 0, repo_lint.stdout
    assert "buf lint: proto/ follows the rules" in repo_lint.stdout


@pytest.mark.parametrize(
    ("edit", "tagged", "reported"),
    [
        # a rule of STANDARD: message names are PascalCase
        (lambda text: text + "\nmessage bad_name {}\n", False, 'Message name "bad_name"'),
        # after a release, removing a field breaks its clients
        (
            lambda text: text.replace('optional string turn_id = 3 [json_name = "turn_id"];', ""),
            True,
            'field "3" with name "turn_id" on message "Message" was deleted',
        ),
    ],
    ids=["lint-rule", "breaking-change"],
)
def test_lint_proto_fails_on(
    edit: Callable[[str], str],
    tagged: bool,
    reported: str,
    tmp_path: Path,
    repo_lint: subprocess.CompletedProcess[str],
) -> None:
    """In a scratch git repository holding the proto, buf.yaml and the script, and linking the
    node_modules that the repository's own run (`repo_lint`) made sure of."""
    (tmp_path / "scripts").mkdir()
    shutil.copytree(REPO / "proto", tmp_path / "proto")
    shutil.copy(REPO / "buf.yaml", tmp_path)
    for script in ("lint-proto.sh", "node-modules.sh"):
        shutil.copy(REPO / "scripts" / script, tmp_path / "scripts")
    (tmp_path / "node_modules").symlink_to(REPO / "node_modules")
    _git(tmp_path, "init", "--quiet")
    _git(tmp_path, "add", "proto", "buf.yaml", "scripts")
    _git(tmp_path, "commit", "--quiet", "-m", "v1")
    before = _lint(tmp_path)
    assert before.returncode == 0, before.stdout
    assert "neither a release tag nor v0.1.0's commit is in this clone" in before.stdout
    if tagged:
        _git(tmp_path, "tag", "v1.0.0")

    proto = tmp_path / PROTO
    changed = edit(proto.read_text(encoding="utf-8"))
    assert changed != proto.read_text(encoding="utf-8"), "the edit changed nothing"
    proto.write_text(changed, encoding="utf-8")
    after = _lint(tmp_path)
    assert after.returncode != 0, after.stdout
    assert reported in after.stdout
