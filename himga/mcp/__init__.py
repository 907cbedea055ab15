"""himga.mcp: the memory as tools a model calls through the Model Context Protocol (`himga mcp`),
on the official `mcp` SDK (`pip install 'himga-memory[mcp]'`): remember, recall, forget, record an
episode, find episodes. Each tool's input schema is made from the shipped JSON Schemas and the
proto's descriptors, never written again here."""
