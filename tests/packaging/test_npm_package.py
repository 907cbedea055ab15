"""The npm package as a user gets it: scripts/npm-package.sh packs himga-memory, a new project
installs the tarball (and nothing of this checkout), compiles against its types with tsc and
calls a server with its client, after validating with its schemas."""

import json
import sys
from pathlib import Path

import pytest

from tests.languages.commands import REPO, run
from tests.packaging.served import serving

pytestmark = pytest.mark.packaging

PROGRAM = """\
import { connectMemory, ingestItem, SchemaValidator, pb, type Session } from "himga-memory";

const session: Session = {
  session_id: "s1",
  messages: [{ role: "Ada", content: "I bought a red kayak.", turn_id: "D1:1" }],
};
const schemas = new SchemaValidator();
if (!schemas.isValid("session", session)) throw new Error("a valid session was refused");
console.log("refused:", schemas.violations("message", { role: "", text: "hi" }).length > 0);
const memory = connectMemory(process.argv[2]!);
const items: pb.IngestItem[] = (session.messages ?? []).map((m) => ingestItem(m, session));
const { ingested } = await memory.ingestBatch({ namespace: "npm", items });
const { context } = await memory.retrieve({ namespace: "npm", query: "kayak" });
console.log(`ingested ${ingested}; context: ${context}`);
"""

TSCONFIG = {
    "compilerOptions": {
        "target": "ES2022",
        "module": "NodeNext",
        "moduleResolution": "NodeNext",
        "strict": True,
        "types": ["node"],
        "outDir": "out",
    },
    "files": ["main.ts"],
}


@pytest.fixture(scope="module")
def tarball(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("npm")
    packed = Path(run(["bash", "scripts/npm-package.sh", str(out)]).strip().splitlines()[-1])
    assert packed.is_file() and packed.parent == out
    return packed


def test_a_new_project_installs_the_tarball_compiles_and_calls_a_server(
    tarball: Path, tmp_path: Path
) -> None:
    root = json.loads((REPO / "package.json").read_text(encoding="utf-8"))["devDependencies"]
    project = tmp_path / "app"
    project.mkdir()
    (project / "package.json").write_text(json.dumps({"name": "app", "type": "module"}))
    (project / "tsconfig.json").write_text(json.dumps(TSCONFIG))
    (project / "main.ts").write_text(PROGRAM)
    npm = ["npm", "install", "--prefix", str(project), "--prefer-offline", "--no-audit"]
    tools = [f"typescript@{root['typescript']}", f"@types/node@{root['@types/node']}"]
    run([*npm, "--no-fund", "--loglevel=error", str(tarball), *tools])
    installed = project / "node_modules" / "himga-memory"
    assert (installed / "schemas" / "v1" / "session.json").is_file()
    assert not installed.is_symlink()  # a copy from the tarball, not a link to this checkout
    run([str(project / "node_modules" / ".bin" / "tsc"), "-p", str(project)])
    with serving(Path(sys.executable).parent / "himga") as served:
        said = run(["node", str(project / "out" / "main.js"), served.target])
    assert "refused: true" in said
    assert "ingested 1; context: " in said and "red kayak" in said
