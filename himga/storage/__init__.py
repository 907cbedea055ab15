"""himga.storage: how himga's files are made on disk (private to the user the server runs as)."""
