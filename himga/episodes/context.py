"""The context string SearchEpisodes returns: what a prompt needs of the episodes found.

For each episode, best first, a header (id, date, outcome, phase, goal), then what matters most
to an agent about to do a similar task: the errors it met with their resolutions (resolved ones
first), the files it changed, and up to MAX_ACTIONS actions that touched the task's files or
share its words. Lines are cut at LINE_CHARS characters. The whole never exceeds the budget:
a line that would overflow it is left out with the rest of its episode, and when not even the
first header fits, it is cut short with "…".
"""

from typing import Any

from himga.episodes.features import Query, normal_path
from himga.memory.text import terms

MAX_ACTIONS = 3
LINE_CHARS = 240


def episode_lines(episode: dict[str, Any], query: Query) -> list[str]:
    """The lines of one episode (its wire form), most important first."""
    context = episode["context"]
    when = episode["timestamp"][:10]
    phase = f", {context['phase']}" if context.get("phase") else ""
    outcome = episode.get("outcome", "success")
    lines = [f"Episode {episode['id']} ({when}, {outcome}{phase}): {context['goal']}"]
    errors = episode.get("errors_encountered", [])
    for error in sorted(errors, key=lambda e: not e.get("resolution")):
        resolution = error.get("resolution")
        fix = f" -> resolved: {resolution}" if resolution else " (unresolved)"
        lines.append(f"  error {error['type']}: {error['message']}{fix}")
    if episode.get("files_modified"):
        lines.append(f"  changed: {', '.join(episode['files_modified'])}")
    wanted = set(query.terms)
    files = set(query.files)
    shown = 0
    for action in episode.get("action_log", []):
        if shown == MAX_ACTIONS:
            break
        target, result = action.get("target", ""), action.get("result", "")
        if normal_path(target) in files or wanted.intersection(
            terms(f"{action['action']} {target} {result}")
        ):
            lines.append(f"  did {action['action']} {target}" + (f" -> {result}" if result else ""))
            shown += 1
    return [_one_line(line) for line in lines]


def build_context(episodes: list[dict[str, Any]], query: Query, max_chars: int) -> str:
    """The context of `episodes` (wire forms, best first) in at most `max_chars` characters."""
    out: list[str] = []
    used = 0
    for episode in episodes:
        for number, line in enumerate(episode_lines(episode, query)):
            cost = len(line) + (1 if out else 0)
            if used + cost > max_chars:
                if not out and max_chars > 0:
                    out.append(line[: max_chars - 1] + "…")
                    used = max_chars
                if number == 0:
                    return "\n".join(out)  # not even this header fits: nothing more will
                break
            out.append(line)
            used += cost
    return "\n".join(out)


def _one_line(text: str) -> str:
    flat = text.replace("\r\n", " ").replace("\n", " ").replace("\r", " ")
    if len(flat) > LINE_CHARS:
        return flat[: LINE_CHARS - 1] + "…"
    return flat
