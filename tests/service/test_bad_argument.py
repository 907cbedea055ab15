"""One mistake is one class wherever the memory runs: a delete that names nothing raises
InvalidArgument naming `ids`, in process and through a server alike."""

import uuid
from collections.abc import Callable

import pytest

from himga.errors import InvalidArgument
from himga.memory.base import BaseMemory
from himga.memory.filters import MessageFilter
from himga.memory.registry import memory_names, open_memory
from himga.service import RemoteMemory
from himga.storage.place import Place
from tests.memory.sync_over_async import SyncOverAsync


def refusal(memory: BaseMemory, call: Callable[[BaseMemory], object]) -> InvalidArgument:
    with pytest.raises(InvalidArgument) as caught:
        call(memory)
    return caught.value


@pytest.mark.parametrize("name", memory_names())
@pytest.mark.parametrize(
    "call",
    [
        pytest.param(lambda m: m.delete(), id="no-ids"),
        pytest.param(lambda m: m.delete(filter=MessageFilter()), id="empty-filter"),
        pytest.param(lambda m: m.delete("t1"), id="one-string"),
    ],
)
def test_a_bad_delete_raises_the_same_class_in_process_and_remotely(
    name: str,
    call: Callable[[BaseMemory], object],
    place_of: Callable[[str], Place],
    server_of: Callable[[str], str],
) -> None:
    namespace = f"bad-argument-{uuid.uuid4().hex}"
    local = open_memory(name, namespace, place_of(name))
    remote = RemoteMemory(server_of(name), namespace, memory=name)
    asynchronous = SyncOverAsync(server_of(name), namespace, memory=name)
    try:
        errors = [refusal(memory, call) for memory in (local, remote, asynchronous)]
    finally:
        for memory in (local, remote, asynchronous):
            memory.close()
    assert [type(error) for error in errors] == [InvalidArgument] * 3
    assert [error.field for error in errors] == ["ids"] * 3
