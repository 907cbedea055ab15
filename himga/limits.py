"""The limits both ends of the wire hold to, so a client and a server agree on them without
either importing the other."""

MAX_MESSAGE_BYTES = 16 * 1024 * 1024
"""The largest request or response, either way; a larger request gets RESOURCE_EXHAUSTED."""
