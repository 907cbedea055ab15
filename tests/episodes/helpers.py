"""Episodes for the tests: small, realistic, and distinct by construction."""

from datetime import UTC, datetime, timedelta

from himga.records import ActionEntry, EpisodeTrace, ErrorEntry

START = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)


def episode(
    number: int,
    goal: str = "Add pagination to the orders API",
    *,
    task_id: str = "",
    agent: str = "coder",
    phase: str = "ACT",
    outcome: str = "success",
    modified: tuple[str, ...] = ("orders/api.py",),
    read: tuple[str, ...] = ("orders/models.py",),
    error: tuple[str, str, str] | None = None,
    importance: float = 0.5,
) -> EpisodeTrace:
    """Episode `ep-<number>`, `number` hours after START, with one action per modified file."""
    made = EpisodeTrace(
        id=f"ep-{number:04d}",
        task_id=task_id or f"task-{number}",
        timestamp=START + timedelta(hours=number),
        agent=agent,
        goal=goal,
        phase=phase,
        outcome=outcome,
        files_read=list(read),
        files_modified=list(modified),
        importance=importance,
        duration_seconds=60 + number,
        tokens_used=1000 + number,
    )
    made.action_log = [
        ActionEntry(tool="edit_file", input=path, output="edited", timestamp=10 * i)
        for i, path in enumerate(modified)
    ]
    if error is not None:
        kind, message, resolution = error
        made.errors_encountered = [
            ErrorEntry(error_type=kind, message=message, resolution=resolution)
        ]
    return made
