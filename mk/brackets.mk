# Floor and ceiling of memory on a LoCoEval-format set (included by the top-level Makefile).
#
#   make brackets BACKBONE=gpt5_mini                                   the fork set (benchmark=locoeval_fork)
#   make brackets BACKBONE=gpt5_mini BENCHMARK=locoeval_verified_v2     the verified set (version 2)
#   make brackets BACKBONE=deepseek_v32 BENCHMARK=locoeval SAMPLES=path/to/samples.jsonl
#   make brackets BACKBONE=qwen3_235b BRACKET_ARGS="run.dry_run=true"  the cost estimate, no call
#
# Runs no_memory and oracle_context (one model call per task each; re-running resumes) and prints
# floor, ceiling and memory headroom per subset (docs/locoeval.md "Floor and ceiling").

BENCHMARK ?= locoeval_fork
SAMPLES ?=
RUN_ID ?= brackets
BRACKET_ARGS ?=

.PHONY: brackets

brackets: setup ## Floor (no_memory), ceiling (oracle_context), headroom: make brackets BACKBONE=<conf/backbone name> [BENCHMARK=.. SAMPLES=..]
	@test -n "$(BACKBONE)" || { echo "make brackets: set BACKBONE=<a conf/backbone name>, e.g. BACKBONE=gpt5_mini" >&2; exit 2; }
	$(PY) -m scripts.brackets backbone=$(BACKBONE) benchmark=$(BENCHMARK) run.run_id=$(RUN_ID) $(if $(SAMPLES),benchmark.samples=$(SAMPLES),) $(BRACKET_ARGS)
