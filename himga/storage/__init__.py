"""himga.storage: what every store shares: where a namespace's files go (`layout`), files only
their owner reads (`files`), write receipts (`receipts`), the before-COMMIT check and
`CallerGone` (`commit`), running out of descriptors or disk (`exhaustion`), SQLite's opening
(`sqlite`), PostgreSQL's pool, schema and namespace rows (`postgres`, `postgres_schema`), the
place a server keeps its namespaces (`place`); and, a floor above the memories and episode
stores, the one way to open a namespace's stores (`namespaces`)."""
