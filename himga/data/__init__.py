"""Conversation data: Message and Session (the schema models), Sample and QAPair."""

from himga.data.schema import Message, QAPair, Sample, Session

__all__ = ["Message", "QAPair", "Sample", "Session"]
