from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Message(_message.Message):
    __slots__ = ("role", "content", "turn_id")
    ROLE_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    role: str
    content: str
    turn_id: str
    def __init__(self, role: _Optional[str] = ..., content: _Optional[str] = ..., turn_id: _Optional[str] = ...) -> None: ...

class Session(_message.Message):
    __slots__ = ("session_id", "messages", "date_str")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    DATE_STR_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    messages: _containers.RepeatedCompositeFieldContainer[Message]
    date_str: str
    def __init__(self, session_id: _Optional[str] = ..., messages: _Optional[_Iterable[_Union[Message, _Mapping]]] = ..., date_str: _Optional[str] = ...) -> None: ...

class IngestRequest(_message.Message):
    __slots__ = ("namespace", "message", "session", "memory")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    MEMORY_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    message: Message
    session: Session
    memory: str
    def __init__(self, namespace: _Optional[str] = ..., message: _Optional[_Union[Message, _Mapping]] = ..., session: _Optional[_Union[Session, _Mapping]] = ..., memory: _Optional[str] = ...) -> None: ...

class IngestResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class IngestItem(_message.Message):
    __slots__ = ("message", "session")
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    message: Message
    session: Session
    def __init__(self, message: _Optional[_Union[Message, _Mapping]] = ..., session: _Optional[_Union[Session, _Mapping]] = ...) -> None: ...

class IngestBatchRequest(_message.Message):
    __slots__ = ("namespace", "items", "memory")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    MEMORY_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    items: _containers.RepeatedCompositeFieldContainer[IngestItem]
    memory: str
    def __init__(self, namespace: _Optional[str] = ..., items: _Optional[_Iterable[_Union[IngestItem, _Mapping]]] = ..., memory: _Optional[str] = ...) -> None: ...

class IngestBatchResponse(_message.Message):
    __slots__ = ("ingested",)
    INGESTED_FIELD_NUMBER: _ClassVar[int]
    ingested: int
    def __init__(self, ingested: _Optional[int] = ...) -> None: ...

class RetrieveRequest(_message.Message):
    __slots__ = ("namespace", "query", "limit", "memory")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    MEMORY_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    query: str
    limit: int
    memory: str
    def __init__(self, namespace: _Optional[str] = ..., query: _Optional[str] = ..., limit: _Optional[int] = ..., memory: _Optional[str] = ...) -> None: ...

class Hit(_message.Message):
    __slots__ = ("turn_id", "session_id", "role", "content", "date_str", "score")
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    DATE_STR_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    turn_id: str
    session_id: str
    role: str
    content: str
    date_str: str
    score: float
    def __init__(self, turn_id: _Optional[str] = ..., session_id: _Optional[str] = ..., role: _Optional[str] = ..., content: _Optional[str] = ..., date_str: _Optional[str] = ..., score: _Optional[float] = ...) -> None: ...

class RetrieveResponse(_message.Message):
    __slots__ = ("context", "hits")
    CONTEXT_FIELD_NUMBER: _ClassVar[int]
    HITS_FIELD_NUMBER: _ClassVar[int]
    context: str
    hits: _containers.RepeatedCompositeFieldContainer[Hit]
    def __init__(self, context: _Optional[str] = ..., hits: _Optional[_Iterable[_Union[Hit, _Mapping]]] = ...) -> None: ...

class ResetRequest(_message.Message):
    __slots__ = ("namespace", "memory")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    MEMORY_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    memory: str
    def __init__(self, namespace: _Optional[str] = ..., memory: _Optional[str] = ...) -> None: ...

class ResetResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...
