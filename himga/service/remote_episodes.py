"""RemoteEpisodes' earlier home: it is himga.client's (himga.client.episodes); this name stays
for code that imports it from here."""

from himga.client.episodes import RemoteEpisodes

__all__ = ["RemoteEpisodes"]
