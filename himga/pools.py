"""Work handed to a thread pool that still gets done while the interpreter exits: the one way
himga's pools (a hybrid search's scan and query, an embedding batch's runs) take their work."""

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")


def started(pool: ThreadPoolExecutor, work: Callable[..., T], *args: Any) -> Future[T]:
    """`work(*args)` set going on `pool`, or done here when the pool takes no more work: the
    interpreter shuts every pool down as it exits, before the atexit handlers run and while
    daemon threads still run, and work asked for then is done in its caller."""
    try:
        return pool.submit(work, *args)
    except RuntimeError:  # cannot schedule new futures after (interpreter) shutdown
        pass
    done: Future[T] = Future()
    try:
        done.set_result(work(*args))
    except Exception as error:
        done.set_exception(error)
    return done
