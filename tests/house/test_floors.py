"""The floors of himga, as the README lists them, hold in the code: every import of every
module, at its top or inside a function, goes to its own part or to a floor below it."""

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ROOTS = {"himga": REPO / "himga", "himga_schema": REPO / "generated/python/himga_schema"}
ROOTS["himga_proto"] = REPO / "generated/python/himga_proto"
# The README's list: "1. `himga`, `himga.errors`: ..." one floor a line, lowest first.
_FLOOR = re.compile(r"^(\d+)\. ((?:`[\w.]+`(?:, | and )?)+)", re.MULTILINE)


def floors() -> dict[str, int]:
    """Each part named in the README's floor list, with its floor."""
    section = (REPO / "README.md").read_text(encoding="utf-8").split("### The floors", 1)[1]
    found: dict[str, int] = {}
    for number, names in _FLOOR.findall(section.split("\n#", 1)[0]):
        for name in re.findall(r"`([\w.]+)`", names):
            found[name] = int(number)
    return found


def part_of(module: str, parts: dict[str, int]) -> str | None:
    """The longest part in `parts` that `module` is, or is inside of."""
    best = None
    for part in parts:
        if (module == part or module.startswith(part + ".")) and len(part) > len(best or ""):
            best = part
    return best


def modules() -> dict[str, Path]:
    found = {}
    for root, folder in ROOTS.items():
        for path in folder.rglob("*.py"):
            relative = path.relative_to(folder).with_suffix("")
            name = ".".join((root, *relative.parts)).removesuffix(".__init__")
            found[name] = path
    return found


def imports(path: Path, module: str) -> set[str]:
    """Every module of himga or its generated packages that `path` imports, anywhere in it."""
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}".rstrip(".")
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return {name for name in found if name.split(".")[0] in ROOTS}


def test_the_readme_names_a_floor_for_every_package() -> None:
    parts = floors()
    packages = {name for name, path in modules().items() if path.name == "__init__.py"}
    packages |= {name for name in modules() if name.count(".") == 1 and name.startswith("himga.")}
    unplaced = sorted(name for name in packages if part_of(name, parts) is None)
    assert unplaced == []


def test_every_import_goes_to_its_own_part_or_a_floor_below() -> None:
    parts = floors()
    known = modules()
    upward = []
    for module, path in known.items():
        if module == "himga.__main__":
            continue  # `python -m himga`: the entry point, above every floor
        mine = part_of(module, parts)
        assert mine is not None, module
        for imported in imports(path, module):
            theirs = part_of(imported, parts)
            if imported not in known and imported.rsplit(".", 1)[0] not in known:
                continue  # a name imported from a module, already counted as that module
            assert theirs is not None, imported
            if theirs != mine and parts[theirs] >= parts[mine]:
                upward.append(
                    f"{module} (floor {parts[mine]}) imports {imported} (floor {parts[theirs]})"
                )
    assert upward == []
