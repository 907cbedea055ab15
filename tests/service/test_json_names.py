"""Every field of the proto names its JSON key explicitly, and that key is the field's own
snake_case name: ProtoJSON (and so the Connect JSON over HTTP) then writes `turn_id` in answers,
as the schemas and the requests spell it, never the default lowerCamelCase `turnId`.

The check reads the descriptors as protoc compiled them into the generated module: a field whose
`json_name` was not written in the proto has none there (protoc records only explicit ones)."""

from collections.abc import Iterator

from google.protobuf import descriptor_pb2, json_format
from himga_proto.memory.v1 import memory_pb2


def fields(message: descriptor_pb2.DescriptorProto, path: str) -> Iterator[tuple[str, object]]:
    for field in message.field:
        yield f"{path}.{field.name}", field
    for nested in message.nested_type:
        if nested.options.map_entry:
            continue  # a map's key/value entry: its JSON is the map's, not keyed by these names
        yield from fields(nested, f"{path}.{nested.name}")


def compiled() -> descriptor_pb2.FileDescriptorProto:
    proto = descriptor_pb2.FileDescriptorProto()
    proto.ParseFromString(memory_pb2.DESCRIPTOR.serialized_pb)
    return proto


def lacking(message: descriptor_pb2.DescriptorProto) -> list[str]:
    """The fields of `message` (and its nested messages) without their own name as json_name."""
    found = []
    for path, field in fields(message, message.name):
        assert isinstance(field, descriptor_pb2.FieldDescriptorProto)
        if not field.HasField("json_name") or field.json_name != field.name:
            found.append(path)
    return found


def test_every_field_has_its_snake_case_name_as_json_name() -> None:
    proto = compiled()
    assert len(proto.message_type) > 10, "the messages were not read from the descriptor"
    assert [path for message in proto.message_type for path in lacking(message)] == []


def test_the_check_sees_a_field_without_one() -> None:
    message = descriptor_pb2.DescriptorProto(name="Probe")
    message.field.add(name="turn_id", number=1)
    message.field.add(name="role", number=2, json_name="role")
    message.field.add(name="date_str", number=3, json_name="dateStr")
    assert lacking(message) == ["Probe.turn_id", "Probe.date_str"]


def test_protojson_writes_the_snake_case_keys() -> None:
    hit = memory_pb2.Hit(turn_id="t1", session_id="s1", date_str="today", score=1.5)
    written = json_format.MessageToDict(hit)
    assert {"turn_id", "session_id", "date_str"} <= set(written)
    assert "turnId" not in written
