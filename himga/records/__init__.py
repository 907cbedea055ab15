"""himga.records: the seed's memory records in Python (EpisodeTrace, TaskContext, ActionEntry,
ErrorEntry), lenient classes built on the models generated from their JSON Schemas.

`episode` holds the record classes; under them, `record` is their base class (building,
to_dict, from_dict, validate), `fields` reads what the generated models say about their fields,
`jsondata` walks JSON documents and paths, and `wording` turns schema errors into the seed's
messages. The seed imports them as `memory.schemas`; `himga.memory.schemas` is that path.
"""

from himga.records.episode import *  # noqa: F403
from himga.records.episode import __all__ as __all__
