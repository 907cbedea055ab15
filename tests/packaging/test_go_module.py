"""The Go client as another module gets it: a new module requires himga.dev/himga (a `replace`
directive points it at this checkout, as it would at a copy or a fork), builds a program with the
generated MemoryService client, `dial` and `memoryerr`, and calls a server with it."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.languages.commands import REPO
from tests.packaging.served import serving

pytestmark = pytest.mark.packaging

PROGRAM = """\
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"himga.dev/himga/examples/go/dial"
	"himga.dev/himga/examples/go/memoryerr"
	memoryv1 "himga.dev/himga/generated/go/himga/memory/v1"
)

func main() {
	conn, err := dial.Options{}.Connect(os.Args[1])
	if err != nil {
		panic(err)
	}
	defer conn.Close()
	client := memoryv1.NewMemoryServiceClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	role, content, turn := "Ada", "I bought a red kayak.", "D1:1"
	_, err = client.Ingest(ctx, &memoryv1.IngestRequest{
		Namespace: "go-module",
		Message:   &memoryv1.Message{Role: role, Content: content, TurnId: &turn},
		Session:   &memoryv1.Session{SessionId: "s1"},
	})
	if err != nil {
		panic(err)
	}
	query := &memoryv1.RetrieveRequest{Namespace: "go-module", Query: "kayak"}
	answer, err := client.Retrieve(ctx, query)
	if err != nil {
		panic(err)
	}
	fmt.Println("context:", answer.GetContext())
	_, err = client.Ingest(ctx, &memoryv1.IngestRequest{Namespace: "go-module"})
	fmt.Println("refused:", memoryerr.Reason(err))
}
"""


def _run(module: Path, *command: str) -> str:
    completed = subprocess.run(command, cwd=module, capture_output=True, text=True, check=False)
    assert completed.returncode == 0, f"{' '.join(command)}: {completed.stdout}{completed.stderr}"
    return completed.stdout


def _go(module: Path, *args: str) -> str:
    return _run(module, "go", *args)


def test_another_module_requires_the_go_client_and_calls_a_server(tmp_path: Path) -> None:
    if shutil.which("go") is None:
        pytest.fail("Go is not installed (go.mod names the version)")
    module = tmp_path / "app"
    module.mkdir()
    (module / "main.go").write_text(PROGRAM)
    _go(module, "mod", "init", "example.com/app")
    _go(
        module, "mod", "edit", "-require=himga.dev/himga@v0.1.0", f"-replace=himga.dev/himga={REPO}"
    )
    _go(module, "mod", "tidy")
    _go(module, "build", "-o", "app", ".")
    with serving(Path(sys.executable).parent / "himga") as served:
        said = _run(module, str(module / "app"), served.target)
    assert "red kayak" in said
    assert "refused: INVALID_REQUEST" in said
