"""`himga reembed`: embed a namespace's hybrid memory again with another model, the command a
store written with another model names when it is refused (himga.memory.hybrid).

    himga reembed --data-dir DIR --namespace NAME --embedding-model MODEL
    himga reembed --database URL --namespace NAME --embedding-model MODEL
    himga reembed --file PATH --embedding-model MODEL   # a HybridSQLiteMemory("PATH") of its own

It deletes the namespace's vectors and records MODEL as theirs in one transaction, then opens
the namespace with MODEL, which embeds every turn with text in one more (a crash in between
leaves a store that embeds them when it next opens). Servers over a data directory should be
stopped first; over a database, a server still serving the namespace with the old model
refuses its calls until it is restarted with MODEL."""

import argparse
import sqlite3
import sys
from pathlib import Path
from typing import Any


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "reembed",
        help="embed a namespace's hybrid memory again with another embedding model",
        description="Delete a hybrid namespace's vectors and embed every message again with "
        "--embedding-model (the model a server then serves it with).",
    )
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--data-dir", type=Path, help="the server's data directory")
    where.add_argument("--database", metavar="URL", help="the servers' PostgreSQL database")
    where.add_argument(
        "--file", type=Path, metavar="PATH", help="a hybrid memory's own SQLite file (no namespace)"
    )
    parser.add_argument("--namespace", help="the namespace to embed again (not with --file)")
    parser.add_argument(
        "--embedding-model",
        required=True,
        metavar="NAME|DIR",
        help="the model: a name from the model cache (`himga models list`) or a model directory",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from himga.embeddings import ModelError
    from himga.errors import HimgaError
    from himga.memory.hybrid import embedder_of
    from himga.memory.hybrid_options import HybridOptions

    if (args.file is None) == (args.namespace is None):
        print(
            "himga reembed: --namespace is needed with --data-dir or --database, and not "
            "taken with --file",
            file=sys.stderr,
        )
        return 2
    try:
        options = HybridOptions(embedding_model=args.embedding_model)
        embedder = embedder_of(options.embedding_model)
    except (ModelError, HimgaError) as error:
        print(f"himga reembed: {error}", file=sys.stderr)
        return 2
    try:
        if args.file is not None:
            forgotten, embedded = _in_file(args.file, options)
        elif args.data_dir is not None:
            forgotten, embedded = _in_data_dir(args.data_dir, args.namespace, options)
        else:
            forgotten, embedded = _in_database(args.database, args.namespace, options)
    except (LookupError, FileNotFoundError, HimgaError, sqlite3.DatabaseError) as error:
        print(f"himga reembed: {error}", file=sys.stderr)
        return 1
    what = f"file {args.file}" if args.file is not None else f"namespace {args.namespace}"
    print(
        f"{what}: {forgotten} vectors deleted, {embedded} messages embedded with "
        f"{embedder.model_id}"
    )
    return 0


def _in_file(path: Path, options: Any) -> tuple[int, int]:
    from himga.memory.hybrid import embedder_of
    from himga.memory.hybrid_sqlite import HybridSQLiteMemory, forget_vectors, is_hybrid_store

    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file")
    if not is_hybrid_store(path):
        raise LookupError(f"{path}: not a hybrid memory's store (it holds no embedding model)")
    forgotten = forget_vectors(path, embedder_of(options.embedding_model).model_id)
    with HybridSQLiteMemory(path, options) as memory:
        return forgotten, memory.embedded_at_open


def _in_data_dir(data_dir: Path, namespace: str, options: Any) -> tuple[int, int]:
    from himga.memory.hybrid_sqlite import (
        HybridSQLiteMemory,
        forget_vectors,
        is_hybrid_store,
        namespace_path,
    )
    from himga.storage import layout

    record = layout.memory_record(data_dir, namespace)
    held = record.read_text(encoding="utf-8") if record.exists() else None
    path = namespace_path(data_dir, namespace)
    # A server records each namespace's kind; one opened by the library (open_memory) has only
    # its store, which says itself whether it is a hybrid memory's.
    unrecorded_hybrid = held is None and path.is_file() and is_hybrid_store(path)
    if held != "hybrid" and not unrecorded_hybrid:
        raise LookupError(
            f"namespace {namespace!r} in {data_dir} holds "
            + ("nothing" if held is None else f"memory {held!r}")
            + ", not a hybrid memory"
        )
    from himga.memory.hybrid import embedder_of

    forgotten = forget_vectors(path, embedder_of(options.embedding_model).model_id)
    with HybridSQLiteMemory(path, options) as memory:
        return forgotten, memory.embedded_at_open


def _in_database(url: str, namespace: str, options: Any) -> tuple[int, int]:
    from himga.memory.hybrid import embedder_of
    from himga.memory.hybrid_postgres import HybridPostgresMemory, forget_vectors
    from himga.storage.postgres import Database

    with Database(url, min_size=1, max_size=2) as database:
        model_id = embedder_of(options.embedding_model).model_id
        forgotten = forget_vectors(database, namespace, model_id)
        memory = HybridPostgresMemory(database, namespace, options)
        try:
            return forgotten, memory.embedded_at_open
        finally:
            memory.close()
