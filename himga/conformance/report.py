"""The kit's pass/fail table: one row per check, required checks first, then a summary line."""

from collections.abc import Sequence

from himga.conformance.checks import KINDS, CheckResult

_HEADER = ("CHECK", "KIND", "RESULT", "WHAT IT ASSERTS / WHAT WAS SEEN")


def passed_required(results: Sequence[CheckResult]) -> bool:
    """True when every required check passed, and every episode check of a server offering
    EpisodeService: the server keeps the contract."""
    return all(r.passed or not r.offered for r in results if r.check.kind != "capability")


def _result(result: CheckResult) -> str:
    if not result.offered:
        return "NOT OFFERED"
    return "PASS" if result.passed else "FAIL"


def render(target: str, results: Sequence[CheckResult]) -> str:
    """The table and its summary, as `himga conformance` prints them."""
    ordered = sorted(results, key=lambda r: KINDS.index(r.check.kind))
    rows = [
        (
            r.check.name,
            r.check.kind,
            _result(r),
            r.check.description if r.passed and not r.detail else r.detail,
        )
        for r in ordered
    ]
    widths = [max(len(row[i]) for row in [_HEADER, *rows]) for i in range(3)]
    lines = [f"Conformance of {target}", ""]
    for row in [_HEADER, *rows]:
        lines.append(
            "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=False)) + "  " + row[3]
        )
    lines.append("")
    for kind in KINDS:
        of_kind = [r for r in results if r.check.kind == kind]
        absent = sum(not r.offered for r in of_kind)
        lines.append(
            f"{kind}: {sum(r.passed for r in of_kind)} passed, "
            f"{sum(r.offered and not r.passed for r in of_kind)} failed"
            + (f", {absent} not offered" if absent else "")
        )
    verdict = "conforms" if passed_required(results) else "does NOT conform"
    offered = all(r.offered for r in results if r.check.kind == "episodes")
    contract = "MemoryService and EpisodeService" if offered else "MemoryService"
    lines.append(f"{target} {verdict} to the {contract} contract")
    if not offered:
        lines.append("(it does not offer EpisodeService: its checks were not run)")
    left = [r for r in results if r.left]
    if left:
        lines.append(
            f"{len(left)} checks could not delete the namespaces they wrote "
            f"(conformance.*): {left[0].left}"
        )
    return "\n".join(lines)
