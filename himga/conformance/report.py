"""The kit's pass/fail table: one row per check, required checks first, then a summary line."""

from collections.abc import Sequence

from himga.conformance.checks import CheckResult

_HEADER = ("CHECK", "KIND", "RESULT", "WHAT IT ASSERTS / WHAT WAS SEEN")


def passed_required(results: Sequence[CheckResult]) -> bool:
    """True when every required check passed: the server keeps the contract."""
    return all(r.passed for r in results if r.check.kind == "required")


def render(target: str, results: Sequence[CheckResult]) -> str:
    """The table and its summary, as `himga conformance` prints them."""
    ordered = sorted(results, key=lambda r: r.check.kind != "required")
    rows = [
        (
            r.check.name,
            r.check.kind,
            "PASS" if r.passed else "FAIL",
            r.check.description if r.passed else r.detail,
        )
        for r in ordered
    ]
    widths = [max(len(row[i]) for row in [_HEADER, *rows]) for i in range(3)]
    lines = [f"MemoryService conformance of {target}", ""]
    for row in [_HEADER, *rows]:
        lines.append(
            "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=False)) + "  " + row[3]
        )
    lines.append("")
    for kind in ("required", "capability"):
        of_kind = [r for r in results if r.check.kind == kind]
        lines.append(
            f"{kind}: {sum(r.passed for r in of_kind)} passed, "
            f"{sum(not r.passed for r in of_kind)} failed"
        )
    verdict = "conforms" if passed_required(results) else "does NOT conform"
    lines.append(f"{target} {verdict} to the MemoryService contract")
    return "\n".join(lines)
