"""The context string SearchEpisodes returns: what a prompt needs of the episodes found.

For each episode, best first, a header (id, date, outcome, phase, goal), then what matters most
to an agent about to do a similar task: the errors it met with their resolutions (resolved ones
first), the files it changed, and up to MAX_ACTIONS actions that touched the task's files or
share its words. Lines are cut at LINE_CHARS characters. The whole never exceeds the budget:
a line that would overflow it is left out with the rest of its episode, and when not even the
first header fits, it is cut short with "…".
"""

from himga.episodes.features import Query, normal_path
from himga.memory.text import terms
from himga.records import EpisodeTrace
from himga.timeutil import to_utc_isoformat

MAX_ACTIONS = 3
LINE_CHARS = 240


def episode_lines(episode: EpisodeTrace, query: Query) -> list[str]:
    """The lines of one episode, most important first."""
    when = to_utc_isoformat(episode.timestamp)[:10]
    phase = f", {episode.phase}" if episode.phase else ""
    lines = [f"Episode {episode.id} ({when}, {episode.outcome}{phase}): {episode.goal}"]
    errors = sorted(episode.errors_encountered, key=lambda e: not e.resolution)
    for error in errors:
        fix = f" -> resolved: {error.resolution}" if error.resolution else " (unresolved)"
        lines.append(f"  error {error.error_type}: {error.message}{fix}")
    if episode.files_modified:
        lines.append(f"  changed: {', '.join(episode.files_modified)}")
    wanted = set(query.terms)
    files = set(query.files)
    shown = 0
    for action in episode.action_log:
        if shown == MAX_ACTIONS:
            break
        text = f"{action.tool} {action.input} {action.output}"
        if normal_path(action.input) in files or wanted.intersection(terms(text)):
            result = f" -> {action.output}" if action.output else ""
            lines.append(f"  did {action.tool} {action.input}{result}")
            shown += 1
    return [_one_line(line) for line in lines]


def build_context(episodes: list[EpisodeTrace], query: Query, max_chars: int) -> str:
    """The context of `episodes` (best first) in at most `max_chars` characters."""
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
