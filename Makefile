# himga: every command a user or CI needs. Each target sets up what it uses, so that on a fresh
# machine `make serve` and `make test` are all there is to type.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PY     := $(BIN)/python
SETUP  := $(VENV)/.installed
NODE   := node_modules/.package-lock.json

HOST     ?= 127.0.0.1
PORT     ?= 50051
DATA_DIR ?= data
# The LoCoMo development file sits beside a checkout of this project; point LOCOMO elsewhere
# for the public locomo10.json.
LOCOMO   ?= ../shared/data/locomo/locomo-dev.json
MEMORY   ?= sqlite

.PHONY: setup generate check-generated lint typecheck test serve bench bench-validate \
        bench-validate-cli bench-service bench-memory eval-retrieval clean

## setup: a virtual environment with himga (editable) and its pinned development tools
setup: $(SETUP)
$(SETUP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $@

## the pinned Node.js tools and libraries (TypeScript generation, tests, buf), and Go's modules
$(NODE): package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
setup: $(NODE)
	go mod download

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

## test: every test of the project
test: $(SETUP) $(NODE)
	$(BIN)/pytest

## serve: the memory server on its embedded default store ($(DATA_DIR)/), on $(HOST):$(PORT)
serve: $(SETUP)
	$(BIN)/himga serve --host $(HOST) --port $(PORT) --data-dir $(DATA_DIR)

## bench: every benchmark (each prints ratios to a baseline measured in the same run)
bench: bench-validate bench-validate-cli bench-service bench-memory

bench-validate: $(SETUP)
	$(PY) benchmarks/bench_validate.py

## bench-validate-cli: `himga validate` beside check-jsonschema on the bundle, the same files
bench-validate-cli: $(SETUP)
	$(PY) benchmarks/bench_validate_cli.py

bench-service: $(SETUP)
	$(PY) benchmarks/bench_service.py

bench-memory: $(SETUP)
	$(PY) benchmarks/bench_memory.py

## eval-retrieval: recall@k of a memory ($(MEMORY)) on a LoCoMo file ($(LOCOMO))
eval-retrieval: $(SETUP)
	$(BIN)/himga eval-retrieval --dataset $(LOCOMO) --memory $(MEMORY)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
