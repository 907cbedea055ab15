"""The before-COMMIT check, CallerGone and receipts, under their earlier path: they live in
himga.storage.commit and himga.storage.receipts, shared by the memories and the episode stores."""

from himga.storage.commit import CallerGone, Terms, before_commit, committing, still_wanted
from himga.storage.receipts import (
    RECEIPT_WINDOW_SECONDS,
    Answer,
    Receipt,
    ReceiptTaken,
    answer_from_json,
)

__all__ = [
    "RECEIPT_WINDOW_SECONDS",
    "Answer",
    "CallerGone",
    "Receipt",
    "ReceiptTaken",
    "Terms",
    "answer_from_json",
    "before_commit",
    "committing",
    "still_wanted",
]
