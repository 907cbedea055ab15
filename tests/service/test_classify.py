"""What ran out gets the status the proto documents: descriptors and memory are
RESOURCE_EXHAUSTED, a store that cannot write is STORE_UNAVAILABLE (and the store's health
hears of it); anything else keeps its own kind."""

import errno
import sqlite3
import threading
from pathlib import Path

import pytest

from himga.errors import ModelError, ModelUnreachable, Unsupported
from himga.service.errors import ResourceExhausted, StoreUnavailable
from himga.service.resources import StoreHealth, classify
from himga.storage import exhaustion

HANG_SECONDS = 60  # protection against a hang only


def sqlite_error(code: int, message: str) -> sqlite3.OperationalError:
    error = sqlite3.OperationalError(message)
    error.sqlite_errorcode = code  # type: ignore[attr-defined]
    return error


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        (MemoryError(), ResourceExhausted),
        (OSError(errno.EMFILE, "Too many open files"), ResourceExhausted),
        (OSError(errno.ENFILE, "Too many open files in system"), ResourceExhausted),
        (OSError(errno.ENOSPC, "No space left on device"), StoreUnavailable),
        (OSError(errno.EROFS, "Read-only file system"), StoreUnavailable),
        (sqlite_error(13, "database or disk is full"), StoreUnavailable),
        (sqlite_error(10 | (4 << 8), "disk I/O error"), StoreUnavailable),
        (sqlite_error(8, "attempt to write a readonly database"), StoreUnavailable),
        (sqlite_error(7, "out of memory"), ResourceExhausted),
    ],
)
def test_what_ran_out_gets_its_kind(error: Exception, kind: type[Exception]) -> None:
    assert isinstance(classify(error), kind)


def test_an_embedding_model_that_does_not_answer_is_unavailable_and_its_address_stays_here(
    caplog: pytest.LogCaptureFixture,
) -> None:
    failed = ModelUnreachable("embeddings endpoint http://10.0.0.7:8081/v1: HTTP 503: overloaded")
    answered = classify(failed)
    assert isinstance(answered, StoreUnavailable)
    assert "embedding model did not answer" in str(answered)
    assert "10.0.0.7" not in str(answered)
    assert "10.0.0.7" in caplog.text


def test_a_model_that_cannot_be_used_is_a_precondition_whose_fix_is_in_the_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Asking again cannot help (it is not "call again later"): the caller learns that, and
    # the operator reads in the log which file or which command; no path reaches the caller.
    missing = ModelError(
        "model 'e5-small-v2' is not in the model cache (/srv/models/e5-small-v2): "
        "run `himga models fetch e5-small-v2`"
    )
    answered = classify(missing)
    assert isinstance(answered, Unsupported)
    assert "cannot use its embedding model" in str(answered) and "log" in str(answered)
    assert "/srv/models" not in str(answered)
    assert "/srv/models" in caplog.text and "himga models fetch e5-small-v2" in caplog.text


def test_other_errors_keep_their_kind() -> None:
    error = KeyError("a bug")
    assert classify(error) is error
    constraint = sqlite_error(19, "UNIQUE constraint failed")
    assert classify(constraint) is constraint


def test_a_store_that_cannot_write_is_reported_once_then_probed_back(tmp_path: Path) -> None:
    heard: list[bool] = []
    back = threading.Event()
    store = StoreHealth(tmp_path)

    def listen(writable: bool) -> None:
        heard.append(writable)
        if writable:
            back.set()

    store.listener = listen
    try:
        classify(OSError(errno.ENOSPC, "No space left on device"), store)
        classify(sqlite_error(13, "database or disk is full"), store)
        assert back.wait(HANG_SECONDS)  # the directory is writable: the probe says so
    finally:
        store.stop()
    assert heard == [False, True]
    assert list(tmp_path.iterdir()) == []  # the probe leaves nothing behind


def test_a_database_file_that_cannot_open_blames_descriptors_only_when_few_are_free(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cannot_open = sqlite_error(14, "unable to open database file")
    monkeypatch.setattr(exhaustion, "free_descriptors", lambda: exhaustion.SHORT_DESCRIPTORS - 1)
    assert isinstance(classify(cannot_open), ResourceExhausted)
    monkeypatch.setattr(exhaustion, "free_descriptors", lambda: 1000)
    assert isinstance(classify(cannot_open), StoreUnavailable)
