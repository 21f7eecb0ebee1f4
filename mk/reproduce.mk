# Reproduction and report targets (included by the top-level Makefile; $(PY) is the venv python).
#
#   make reproduce-table1      LoCoEval sweep for Tables 1, 3, 4 and Figures 5, 8, then the report
#   make reproduce-all         every sweep, the coverage judge, then the report
#   make report RUNS=results   rebuild every table / figure from existing records only
#
# Sweeps are Hydra multiruns of `python -m scripts.run`; add launcher or other overrides with
# SWEEP_ARGS, e.g. SWEEP_ARGS="hydra/launcher=submitit_local run.workers=4" (see conf/hydra/launcher).
# Re-running a target resumes: finished samples are skipped, cached LLM calls cost nothing.
# The table1/table2/table6/coverage experiments set run.reproduction=true: they refuse to start with a
# local model as user or judge (one-line error) unless SWEEP_ARGS="allow_local_eval_models=true".
# Spending: SWEEP_ARGS="run.dry_run=true" prints the estimate without any call; run.cost_limit_usd=<$>
# stops cleanly (resume with a higher limit). One run over N jobs: run.shard=I/N (docs/ARCHITECTURE.md).

RUNS ?= results
REPORT_DIR ?= reports/latest
# JUDGE: the paper's coverage judge (§4.4). CALIB_SAMPLES: LoCoEval samples of the Table 6 CR calibration.
# ABLATIONS: the ablations calibrate-table6 CR-matches (w/o HCC keeps ReConMem's budgets: its whole-file code
# context costs more than any budget cut saves). A calibration outside calib.tolerance exits 3 and stops the
# target; CALIB_ARGS=calib.accept_out_of_tolerance=true writes the closest budgets instead (Table 6 then
# labels the row by the gap it achieves).
JUDGE ?= gemini_25_flash
CALIB_SAMPLES ?= 8
CALIB_ARGS ?=
ABLATIONS ?= reconmem_wo_gae reconmem_wo_smg reconmem_wo_qg
SWEEP_ARGS ?=
REPORT_ARGS ?=
COVERAGE_ARGS ?=
# `experiment=` when conf/config.yaml lists an experiment default, else `+experiment=` (append).
EXPERIMENT := $(if $(shell grep -E '^\s*-\s*(optional\s+)?experiment\s*:' conf/config.yaml 2>/dev/null),experiment,+experiment)

.PHONY: report coverage reproduce-table1 reproduce-table2 reproduce-table3 reproduce-table4 reproduce-table5 \
        reproduce-table6 reproduce-coverage reproduce-figures reproduce-demo reproduce-all sweep-table1 \
        sweep-table2 sweep-table6 sweep-coverage sweep-demo calibrate-table6

report: setup ## Build every table and figure from existing records: make report RUNS=results REPORT_DIR=reports/latest
	$(PY) -m scripts.report --runs $(RUNS) --out $(REPORT_DIR) $(REPORT_ARGS)

coverage: setup ## Judge GT-item coverage of ReConMem task contexts in RUNS with JUDGE (a conf/backbone name)
	$(PY) -m scripts.coverage --runs $(RUNS) --judge-backbone $(JUDGE) $(COVERAGE_ARGS)

sweep-table1: setup
	$(PY) -m scripts.run -m $(EXPERIMENT)=table1 $(SWEEP_ARGS)

sweep-table2: setup
	$(PY) -m scripts.run -m $(EXPERIMENT)=table2 $(SWEEP_ARGS)

calibrate-table6: setup ## CR-matched budgets of the Table 6 ablations (conf/method/calibrated/cr_matched/qwen3_235b/)
	for m in $(ABLATIONS); do \
	  $(PY) -m scripts.calibrate_cr $(EXPERIMENT)=table6 method=$$m calib.samples=$(CALIB_SAMPLES) $(CALIB_ARGS) || exit $$?; \
	done
	$(PY) -m scripts.calibrate_cr --report qwen3_235b

sweep-table6: setup calibrate-table6
	$(PY) -m scripts.run -m $(EXPERIMENT)=table6 $(SWEEP_ARGS)

sweep-coverage: setup
	$(PY) -m scripts.run -m $(EXPERIMENT)=coverage $(SWEEP_ARGS)

sweep-demo: setup
	$(PY) -m scripts.run -m $(EXPERIMENT)=demo $(SWEEP_ARGS)

reproduce-table1: sweep-table1 ## Table 1 (Pass@1, CR): 7 methods x 3 backbones on LoCoEval, then the report
	$(MAKE) --no-print-directory report RUNS=$(RUNS)/locoeval

reproduce-table3: reproduce-table1 ## Table 3 (end-to-end tokens): same runs as Table 1

reproduce-table4: reproduce-table1 ## Table 4 (ReConMem stage breakdown): same runs as Table 1

reproduce-table2: sweep-table2 ## Table 2 (CAB correctness / verbosity / turns), then the report
	$(MAKE) --no-print-directory report RUNS=$(RUNS)/cab

reproduce-table5: reproduce-table2 ## Table 5 (CAB tokens): same runs as Table 2

reproduce-table6: sweep-table6 ## Table 6 (ablations, Qwen3-235B), then the report
	$(MAKE) --no-print-directory report RUNS=$(RUNS)/locoeval

reproduce-coverage: sweep-coverage ## Figures 6-7: ReConMem runs, the coverage judge (JUDGE=...), then the report
	$(MAKE) --no-print-directory coverage RUNS=$(RUNS)/locoeval
	$(MAKE) --no-print-directory report RUNS=$(RUNS)/locoeval

reproduce-figures: reproduce-table1 reproduce-coverage ## Figures 5-8 (Table 1 runs + coverage)

reproduce-demo: sweep-demo ## Offline: ReConMem and Full on the demo samples with the local model, then the report
	$(MAKE) --no-print-directory report RUNS=$(RUNS)/demo REPORT_DIR=reports/demo

reproduce-all: sweep-table1 sweep-table6 sweep-coverage sweep-table2 ## Every sweep, the coverage judge, then one report over RUNS
	$(MAKE) --no-print-directory coverage RUNS=$(RUNS)/locoeval
	$(MAKE) --no-print-directory report RUNS=$(RUNS)
