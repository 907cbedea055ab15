"""The PostgreSQL schema himga keeps (every namespace of every server in one database) and its
numbered migrations.

`himga_schema` holds the schema's version. Each migration runs in one transaction of its own,
under an advisory lock (`LOCK_KEY`), and raises the version as its last statement: servers that
start at once wait for each other and migrate once, and a crash half-way leaves the schema of
the step before. A database of a newer version than `VERSION` was migrated by a newer himga: a
server refuses to start on it (IncompatibleStoreError, naming both versions) rather than write
what that himga would misread.

Tables (all keyed by the namespace's id):
- `himga_namespaces`: one row a namespace: its name, the memory it holds (NULL while only its
  episodes exist), and the counters that keep servers coherent: `version` (raised by every
  write of its messages) and `generation` (raised when rows change other than by being
  appended), `episode_version` and `episode_generation` (the same for its episodes). A writer
  takes the row FOR UPDATE, so writes to one namespace serialise across servers.
  `next_number` is the number the namespace's next new message gets: one past the highest ever
  given, deleted or not, so a server that read the namespace anew numbers on as the others do.
- `himga_messages`: each message under its turn number (the order ids were first stored), with
  its own terms as the memory's text method made them (`terms`, apart by spaces; `method` on
  the namespace names the method).
- `himga_receipts`: the receipts of writes with a request id (himga.storage.receipts), written in
  the write's transaction; `kind` keeps messages' and episodes' apart.
- `himga_episodes`, `himga_episode_files`: each episode's wire form, the columns its listings
  filter on, its ranking features, and `seq` (the namespace's episode_version that wrote it);
  `episode_terms` on the namespace names the text method that made the features' terms.
  `himga_episode_vectors`: an episode's vector and the embedding model that made it (a store
  with the `embedding_model` option; himga.episodes.meaning), deleted with the episode.
- `himga_changes`: the change log of messages: one row for each write that raised `generation`
  other than a reset (a delete, a correction), under the `version` it set: the turn numbers it
  deleted or replaced and each one's own terms before it (as `terms` held them). Another server
  holding the namespace applies these in place (himga.memory.postgres); a write keeps the rows
  of the newest versions only (himga.memory.postgres.CHANGES_KEPT); a server further behind
  reads anew.
- `himga_vectors`: the hybrid memory's vector of each message with text (little-endian
  float32), deleted with its message; `embedding_model` on the namespace names the model that
  made them (himga.memory.hybrid_postgres).
- `himga_tokens`, `himga_counters`: the tokens servers accept (himga.service.database_tokens),
  and a counter raised by every change to them.
"""

LOCK_KEY = 0x68696D6761  # "himga"
"""The advisory lock migrations run under."""

MIGRATIONS: tuple[tuple[str, ...], ...] = (
    # 1: namespaces, messages, receipts
    (
        """CREATE TABLE himga_namespaces (
            id bigserial PRIMARY KEY,
            name text NOT NULL UNIQUE,
            memory text,
            method text,
            version bigint NOT NULL DEFAULT 0,
            generation bigint NOT NULL DEFAULT 0
        )""",
        """CREATE TABLE himga_messages (
            namespace bigint NOT NULL REFERENCES himga_namespaces (id) ON DELETE CASCADE,
            number integer NOT NULL,
            turn_id text NOT NULL,
            session_id text NOT NULL,
            speaker text NOT NULL,
            length integer NOT NULL,
            role text NOT NULL,
            content text NOT NULL,
            date_str text NOT NULL,
            timestamp bigint,
            session_timestamp bigint,
            time bigint,
            metadata text,
            terms text NOT NULL,
            PRIMARY KEY (namespace, number),
            UNIQUE (namespace, turn_id)
        )""",
        """CREATE TABLE himga_receipts (
            namespace bigint NOT NULL REFERENCES himga_namespaces (id) ON DELETE CASCADE,
            kind text NOT NULL,
            request_id text NOT NULL,
            digest text NOT NULL,
            answer text NOT NULL,
            at double precision NOT NULL,
            PRIMARY KEY (namespace, kind, request_id)
        )""",
        "CREATE INDEX himga_receipts_at ON himga_receipts (namespace, kind, at)",
    ),
    # 2: episodes
    (
        "ALTER TABLE himga_namespaces ADD COLUMN episode_version bigint NOT NULL DEFAULT 0",
        "ALTER TABLE himga_namespaces ADD COLUMN episode_generation bigint NOT NULL DEFAULT 0",
        """CREATE TABLE himga_episodes (
            namespace bigint NOT NULL REFERENCES himga_namespaces (id) ON DELETE CASCADE,
            id text NOT NULL,
            seq bigint NOT NULL,
            micros bigint NOT NULL,
            task_id text NOT NULL,
            agent text NOT NULL,
            phase text NOT NULL,
            outcome text NOT NULL,
            access_count integer NOT NULL,
            last_accessed text,
            document text NOT NULL,
            features text NOT NULL,
            PRIMARY KEY (namespace, id)
        )""",
        "CREATE INDEX himga_episodes_seq ON himga_episodes (namespace, seq)",
        "CREATE INDEX himga_episodes_time ON himga_episodes (namespace, micros, id)",
        """CREATE TABLE himga_episode_files (
            namespace bigint NOT NULL,
            path text NOT NULL,
            id text NOT NULL,
            PRIMARY KEY (namespace, path, id),
            FOREIGN KEY (namespace, id) REFERENCES himga_episodes (namespace, id)
                ON DELETE CASCADE
        )""",
    ),
    # 3: tokens
    (
        """CREATE TABLE himga_tokens (
            id text PRIMARY KEY,
            sha256 text NOT NULL,
            namespaces text NOT NULL,
            rights text NOT NULL,
            created text NOT NULL
        )""",
        "CREATE TABLE himga_counters (name text PRIMARY KEY, value bigint NOT NULL)",
        "INSERT INTO himga_counters VALUES ('tokens', 0)",
    ),
    # 4: the number the next new message of a namespace gets, kept past deletes, so that every
    # server numbers new turns alike after the newest ones were deleted
    (
        "ALTER TABLE himga_namespaces ADD COLUMN next_number integer NOT NULL DEFAULT 0",
        """UPDATE himga_namespaces SET next_number = coalesce((
            SELECT max(number) + 1 FROM himga_messages WHERE namespace = himga_namespaces.id
        ), 0)""",
    ),
    # 5: the change log: what each delete or correction took out, so that other servers apply
    # it in place instead of reading the namespace again
    (
        """CREATE TABLE himga_changes (
            namespace bigint NOT NULL REFERENCES himga_namespaces (id) ON DELETE CASCADE,
            version bigint NOT NULL,
            numbers integer[] NOT NULL,
            old_terms text[] NOT NULL,
            PRIMARY KEY (namespace, version)
        )""",
    ),
    # 6: the vectors of episodes recorded by a store with an embedding model, deleted with them
    (
        """CREATE TABLE himga_episode_vectors (
            namespace bigint NOT NULL,
            id text NOT NULL,
            model text NOT NULL,
            vector bytea NOT NULL,
            PRIMARY KEY (namespace, id),
            FOREIGN KEY (namespace, id) REFERENCES himga_episodes (namespace, id)
                ON DELETE CASCADE
        )""",
    ),
    # 7: the hybrid memory's vectors (himga.memory.hybrid_postgres), and the model that made a
    # namespace's
    (
        "ALTER TABLE himga_namespaces ADD COLUMN embedding_model text",
        """CREATE TABLE himga_vectors (
            namespace bigint NOT NULL,
            number integer NOT NULL,
            vector bytea NOT NULL,
            PRIMARY KEY (namespace, number),
            FOREIGN KEY (namespace, number) REFERENCES himga_messages (namespace, number)
                ON DELETE CASCADE
        )""",
    ),
    # 8: the method that made the terms of a namespace's episodes' features (NULL: the one
    # before it was recorded), so that a server whose method differs makes them again
    ("ALTER TABLE himga_namespaces ADD COLUMN episode_terms text",),
    # 9: the message number from which a namespace is listed again (himga.service.catalog):
    # DeleteNamespace sets it to next_number, so a first write after it that numbers nothing
    # (it failed) leaves the namespace unlisted, as a new namespace's does; one deleted before
    # (no memory recorded, numbers given) is set so too
    (
        "ALTER TABLE himga_namespaces ADD COLUMN listed_from integer NOT NULL DEFAULT 0",
        "UPDATE himga_namespaces SET listed_from = next_number WHERE memory IS NULL",
    ),
)
VERSION = len(MIGRATIONS)
"""The schema version this himga writes: migration n takes version n - 1 to n."""
