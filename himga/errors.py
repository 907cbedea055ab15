"""The exceptions himga raises: one package base, each also a builtin callers already catch."""


class HimgaError(Exception):
    """Base of every error himga raises on purpose, so callers can catch them all at once."""


class SchemaError(HimgaError, ValueError):
    """A document breaks one rule of a schema.

    `path` is a JSON path into the document (`$.context.goal`), `reason` says what is wrong
    there, `keyword` names the broken rule (`required`, `minimum`, ...) and `schema_path`
    locates that rule in the schema files (`<$id>#/properties/goal/minLength`).
    """

    def __init__(self, path: str, reason: str, keyword: str = "", schema_path: str = "") -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason
        self.keyword = keyword
        self.schema_path = schema_path

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SchemaError):
            return NotImplemented
        return (self.path, self.reason, self.keyword, self.schema_path) == (
            other.path,
            other.reason,
            other.keyword,
            other.schema_path,
        )

    def __hash__(self) -> int:
        return hash((self.path, self.reason, self.keyword, self.schema_path))

    def __repr__(self) -> str:
        return f"SchemaError(path={self.path!r}, reason={self.reason!r}, keyword={self.keyword!r})"


class UnknownTypeError(HimgaError, LookupError):
    """A type name or schema `$id` that none of the shipped schemas has."""


class IncompatibleStoreError(HimgaError, ValueError):
    """A memory's stored data was written in a form this himga does not read (for example, by
    another version's retrieval method); the message says what to do."""


class MemoryMismatch(HimgaError, RuntimeError):
    """A call names another memory than the one its namespace was opened with."""


class NotFoundError(HimgaError, LookupError):
    """A record asked for by its id is not stored (an episode GetEpisode names, for one)."""


class InvalidArgument(HimgaError, ValueError):
    """An argument breaks a rule of the call: `field` names it as the proto does (`page_token`,
    `filter.before`), `rule` says what it must be. Over the wire it is INVALID_ARGUMENT naming
    that field."""

    def __init__(self, field: str, rule: str) -> None:
        super().__init__(f"{field}: {rule}")
        self.field = field
        self.rule = rule


class Unsupported(HimgaError, RuntimeError):
    """A memory cannot do what a call asks (filter, delete, list) and refuses it, rather than
    ignore part of the request; the message says what it cannot do."""


class DatabaseUnavailable(HimgaError, ConnectionError):
    """The database cannot be reached now (down, failing over, or the connection was lost). A
    write that raised it may or may not have committed: send it again with the same request id
    to learn which, without storing it twice."""
