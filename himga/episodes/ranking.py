"""How episodes are ranked for a task: one formula, computed by himga.episodes.index for every
store, so that every store returns the same hits with the same scores.

    score = (text + files) * outcome * phase  +  TIE_WEIGHT * (importance + recency)

- text: BM25 of the query's terms (the task's goal and the free text, stemmed as the keyword
  memories stem) against the episode's goal, errors and actions, a term counting GOAL_WEIGHT
  times in the goal, ERROR_WEIGHT in an error (its type, message and resolution) and
  ACTION_WEIGHT in an action (its tool, target and result). The idf and BM25's k1 and b are the
  keyword method's (himga.memory.ranking): idf(t) = ln(1 + (N - n + 0.5) / (n + 0.5)).
- files: for each file of the task that the episode touched, that file's idf over the episodes
  (a file every episode reads says little) times how it touched it (modified 1.0, read 0.6,
  only named 0.4); for each file of the task whose folder the episode touched, DIR_WEIGHT times
  that folder's idf.
- outcome: success 1.0, partial PARTIAL, failure FAILURE. A debugging task (its goal or free
  text holds a word such as fix, bug, error, failing, crash, or quotes an error such as
  KeyError) weighs outcomes otherwise: what fixed the same error last time is what it needs
  most, so an episode that met an error and wrote down its resolution counts up to RESOLVED,
  by the share of the query's words (idf-weighted) its errors hold; a failed attempt counts
  DEBUGGING_FAILURE (it shows what did not work).
- phase: 1 + PHASE_BONUS when the task names a phase and the episode ran in the same one.
- importance (0 to 1) and recency (1 for the newest episode stored, 1/2 for one RECENCY_DAYS
  older, 1/3 for twice that ...) only break near-ties.

An episode matching neither a term nor a file of the task is not returned. Ties go to the newer
episode, then to the smaller id.
"""

from himga.memory.ranking import K1, B, idf

__all__ = [
    "ACTION_WEIGHT",
    "DEBUGGING_FAILURE",
    "DIR_WEIGHT",
    "ERROR_WEIGHT",
    "FAILURE",
    "GOAL_WEIGHT",
    "K1",
    "OUTCOMES",
    "PARTIAL",
    "PHASES",
    "PHASE_BONUS",
    "RECENCY_DAYS",
    "RESOLVED",
    "TIE_WEIGHT",
    "B",
    "idf",
    "outcome_factor",
]

GOAL_WEIGHT = 1.0
ERROR_WEIGHT = 1.0
ACTION_WEIGHT = 0.5
DIR_WEIGHT = 0.25
PARTIAL = 0.85
FAILURE = 0.7
RESOLVED = 1.5
DEBUGGING_FAILURE = 1.0
PHASE_BONUS = 0.2
TIE_WEIGHT = 0.01
RECENCY_DAYS = 30.0

# Codes the index keeps per episode; position 0 is the schema's default or "unknown".
OUTCOMES = ("success", "partial", "failure")
PHASES = ("", "REASON", "ACT", "REFLECT", "VERIFY")


def outcome_factor(outcome: str, resolved: bool, debugging: bool) -> float:
    """The outcome's factor for a task (debugging or not)."""
    if debugging:
        return RESOLVED if resolved else DEBUGGING_FAILURE if outcome == "failure" else 1.0
    return {"partial": PARTIAL, "failure": FAILURE}.get(outcome, 1.0)
