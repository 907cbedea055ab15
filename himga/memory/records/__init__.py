"""The machinery under `himga.memory.schemas`: lenient records built on the generated models.

`record` holds the base class (building, to_dict, from_dict, validate), `fields` reads what
the generated models say about their fields, `jsondata` walks JSON documents and paths, and
`wording` turns schema errors into the seed's messages.
"""
