# ReConMem harness. `make help` lists the targets.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export LITELLM_LOCAL_MODEL_COST_MAP := True
export TOKENIZERS_PARALLELISM := false

.DEFAULT_GOAL := help
.PHONY: help setup test test-full demo demo-full bench oracle lint clean docker-engine sandbox-deps docker-prune browser

help: ## Show this help
	@grep -hE '^[a-zA-Z0-9_-]+:.*?## ' $(MAKEFILE_LIST) | sort | awk 'BEGIN {FS = ":.*?## "}; {printf "  \033[36m%-18s\033[0m %s\n", $$1, $$2}'

# INSTALLER=auto: uv with pip's settings, pip when uv is unavailable or fails; uv or pip: that one only (mk/install.py)
INSTALLER ?= auto

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) mk/install.py --installer $(INSTALLER)
	@touch $(STAMP)

setup: $(STAMP) ## Create .venv and install the package with dev extras (uv, else pip; idempotent)

test: setup ## Run the fast test suite (what CI runs)
	@RECONMEM_OFFLINE=1 $(PY) -m pytest -q; rc=$$?; if [ $$rc -eq 5 ]; then echo "pytest: no tests were collected (exit 5)"; exit 1; fi; exit $$rc

test-full: setup ## Run every test, including slow ones (real local model, full oracle)
	RECONMEM_OFFLINE=1 $(PY) -m pytest -q -m "slow or not slow"

demo: setup ## ReConMem vs Full on one demo conversation (4 turns, 1 task) with the offline local model
	$(PY) -m scripts.demo

demo-full: setup ## ReConMem vs Full on all three demo samples (12 turns each) with the offline local model
	$(PY) -m scripts.demo --full

bench: setup ## Print the benchmark ratios (index, llm, prefill, recall, methods)
	$(PY) -m scripts.bench index --embed --repo $$($(PY) -c "from reconmem.platform.downloads import fetch_pypi_source as f; print(f('Faker','20.1.0')/'Faker-20.1.0')")
	$(PY) -m scripts.bench llm
	$(PY) -m scripts.bench prefill
	$(PY) -m scripts.bench recall
	$(PY) -m scripts.bench methods

oracle: setup ## Validate all DevEval tasks of the shipped source list (reference passes, blank fails)
	$(PY) -m scripts.deveval_oracle --workers 2

docker-engine: ## Start a Docker engine if none answers (installs docker.io, debootstrap, bubblewrap; root, Debian/Ubuntu)
	@bash scripts/docker_engine.sh

sandbox-deps: ## Install the local sandbox's tools only (bubblewrap, debootstrap; root, Debian/Ubuntu)
	@RECONMEM_DOCKER_TOOLS_ONLY=1 bash scripts/docker_engine.sh

browser: ## Install headless Chromium and its driver for the inspect view test (Debian's chromium, chromium-driver; root)
	@if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null \
	  && echo "browser: installed Debian's chromium and chromium-driver"; fi

docker-prune: setup ## Remove this project's Docker images and stopped containers (KEEP=env keeps environment images)
	$(PY) -m scripts.docker_images prune $(if $(KEEP),--keep $(KEEP),)

clean: ## Remove build artefacts (keeps .venv, caches and results)
	rm -rf build *.egg-info .pytest_cache

-include mk/reproduce.mk
-include mk/brackets.mk
