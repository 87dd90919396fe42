# NEURON-Fabric: the way in.  `make` exports the default Verilog, lints it,
# runs the functional check and summarises the default configuration on
# silicon proxies (minutes); `make report` runs the whole hardware sweep;
# `make test` runs the test suite.  Both create the
# local virtual environment (.venv) when it is missing or older than
# pyproject.toml.  Every output goes under build/.

PYTHON    ?= python3
VENV      := .venv
PY        := $(VENV)/bin/python
STAMP     := $(VENV)/.installed
JOBS      ?= 2

LINE_BITS ?= 512
WORKERS   ?= 8
STAGES    ?= 5
REGIONS   ?= 8
MAX_OUTSTANDING ?= 32
PROFILE   ?= full
SIM       ?= verilator

# SMOKE=1 runs every target in its quick form: the smallest configuration,
# a few steps, one seed, low effort, reports under build/reports/smoke
# (tests/test_make_targets.py runs each target of the README so, with the
# configuration variables at the 64-bit top).  $(call smoke,QUICK,FULL)
# gives a recipe's arguments in either form.
SMOKE ?=
smoke = $(if $(SMOKE),$(1),$(2))

# Where reports and the exported Verilog go, and the register tables regdocs
# writes (a test moves them to a scratch folder).
REPORTS     ?= build/reports$(call smoke,/smoke)
VERILOG_DIR ?= build/verilog
REGDOCS     ?= docs/registers.md build/docs/registers.md
export NEURON_FABRIC_REPORTS := $(abspath $(REPORTS))

.PHONY: all help venv verilog lint test test-quick test-long bench bench-ddp ddp ddp-quick race train train-quick train-rates train-batch64 hierarchy envelope latency envelope-rtl functional regdocs release release-lint synth route ge endpoints sky130 summary report clean pilots train-rtl figures configs train-full evidence

# verilog, lint, functional and summary; the summary's routes (the longest
# part) run beside the export, lint and the functional check, each export
# done once (build/cache/verilog).
all: $(STAMP)
	$(MAKE) --no-print-directory -j$(JOBS) lint functional summary

help:
	@echo "make              verilog, lint, functional, summary (the default configuration, minutes)"
	@echo "make test         run the test suite (pytest, $(JOBS) workers) less the tests marked long"
	@echo "make test-quick   the suite less the tests marked slow or long"
	@echo "make test-long    the tests marked long: long variants of checks make test runs fast"
	@echo "make verilog      export build/verilog/*.v (LINE_BITS= WORKERS= STAGES= REGIONS= MAX_OUTSTANDING= PROFILE=)"
	@echo "make functional   paper section 6 check on the top: identity, G-Binary, G-Ternary (SIM=verilator|icarus)"
	@echo "make regdocs      regenerate docs/registers.md (and build/docs/registers.md) from contract/regmap.py,"
	@echo "                  and the port tables of README.md and docs/top.md from the export's port list"
	@echo "make lint         verilator --lint-only -Wall on the exported Verilog"
	@echo "make release      build/release/: the default Verilog of both profiles, register maps, parameter"
	@echo "                  headers, lint waivers (.vlt), a FuseSoC core without Python, LICENSE, CHANGELOG entry, SHA256SUMS"
	@echo "make release-lint the release's files linted with its own waiver file (verilator -Wall)"
	@echo "make bench        golden-model throughput on a 64 MiB buffer; gradient runtime through the device model"
	@echo "make bench-ddp    the DDP hook's pack and decode on one core -> build/reports/ddp_bench.json"
	@echo "make ddp          torchrun training with the DDP hooks, 2/3/4/8 processes (and the drop-in run), and the 1M-parameter"
	@echo "                  speed runs -> build/reports/ddp.{md,json}, ddp.png (make ddp-quick: smoke run)"
	@echo "make race         every DDP hook and the software vote on one bucket, 4 KiB to 64 MiB, 2/4/8 ranks,"
	@echo "                  and the link model's projection (10-15 min) -> build/reports/race.{md,json}, race*.png"
	@echo "make train        training experiments (Fig. 4/5, Tables 5/6) -> build/reports/training.*"
	@echo "make train-full   every training experiment: 5 seeds, whole grids, the batch-64 sweep -> build/reports/full/"
	@echo "make train-quick  seconds-long smoke run of the training experiments -> build/reports/quick/"
	@echo "make train-batch64 the hard task at 64 examples a worker: FP32, G-Binary, the split (3 min) -> build/reports/batch64.{md,json}"
	@echo "make train-rates  choose the hard task's learning rates make train uses (about 25 min) -> build/reports/learning_rates.{md,json}"
	@echo "make hierarchy    multi-hop study (exact counts vs re-quantizing per hop), 64-worker training,"
	@echo "                  multi-hop timing -> build/reports/hierarchy.*"
	@echo "make envelope     timing envelope: Table 4, Fig. 2/3/7 -> build/reports/envelope.*"
	@echo "make latency      the top's own latencies in cycles (MemWr, BYPASS and G-Binary reads, control write)"
	@echo "make envelope-rtl exported top vs the envelope model, Verilator -> build/reports/envelope_rtl.*"
	@echo "make synth        Yosys generic-cell synthesis of the datapath, both profiles -> build/reports/synth.*"
	@echo "make route        ECP5 out-of-context place and route, 3 seeds each -> build/reports/route.*"
	@echo "make ge           gate-equivalent area/energy/2 GHz slack model -> build/reports/ge.*"
	@echo "make endpoints    flip-flop input arrivals by driver after routing, cores and top, 512 bits -> build/reports/endpoints.*"
	@echo "make sky130       cell area on SkyWater sky130_fd_sc_hd (no timing), every width -> build/reports/sky130.*"
	@echo "make summary      512 bits, W 8, STAGES 5, both profiles and the top: cells, one ECP5 route,"
	@echo "                  GE, sky130 area, beside the paper -> build/reports/summary.{md,json}"
	@echo "make report       synth, route, ge, endpoints, sky130 -> build/reports/hardware.md with plots"
	@echo "make pilots       control-plane pilots (Fig. 6 recovery, live ladder, late update) -> build/reports/pilots.*"
	@echo "make train-rtl    training with the exported top under Verilator in the loop, against the device model"
	@echo "make figures      rewrite the figure blocks of README and docs/*.md from build/reports/*.json (absent ones kept)"
	@echo "make configs      every legal parameter set exported, linted and run against the device model"
	@echo "                  -> build/reports/configs.{md,json}"
	@echo "SMOKE=1           any target in its quick form (the smallest configuration, a few steps)"
	@echo "make venv         create or refresh .venv"
	@echo "make clean        remove build/"

venv: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	@touch $@

verilog: $(STAMP)
	$(VENV)/bin/neuron-fabric-export --line-bits $(LINE_BITS) --workers $(WORKERS) \
	    --stages $(STAGES) --regions $(REGIONS) --max-outstanding $(MAX_OUTSTANDING) \
	    --profile $(PROFILE) --out-dir $(VERILOG_DIR) --cache build/cache/verilog

lint: verilog
	$(PY) -m neuron_fabric.sim.lint $(VERILOG_DIR)

# (SMOKE=1: one small test module collected, not run, in this process: the
# options and marks parse; make test itself runs the whole suite)
PYTEST = $(PY) -m pytest -n $(call smoke,0,$(JOBS)) --dist loadgroup $(call smoke,--collect-only -q)
TESTS  = $(call smoke,tests/hdl/top/test_configs.py,tests)

test: $(STAMP)
	$(PYTEST) --durations=15 -m "not long" $(TESTS)

test-quick: $(STAMP)
	$(PYTEST) -m "not slow and not long" $(TESTS)

test-long: $(STAMP)
	$(PYTEST) --durations=15 -m long $(TESTS)

bench: $(STAMP)
	$(PY) -m neuron_fabric.sim.bench_golden $(call smoke,--mib 1 --repeat 1) --out $(REPORTS)/golden_bench.json
	$(PY) -m neuron_fabric.sim.bench_runtime $(call smoke,--mib 1 --repeat 1) --out $(REPORTS)/runtime_bench.json

# (SMOKE=1: 1 Mi elements; the quick form's report, 2 processes and a few steps)
bench-ddp: $(STAMP)
	$(PY) -m neuron_fabric.experiments.ddp.bench $(call smoke,--elements 1048576) --out $(REPORTS)

ddp: bench-ddp
	$(PY) -m neuron_fabric.experiments.ddp.report $(call smoke,--quick) --out $(REPORTS)

ddp-quick: $(STAMP)
	$(PY) -m neuron_fabric.experiments.ddp.report --quick --out $(REPORTS)

# (SMOKE=1: 2 ranks, 4 KiB and 64 KiB, 2 repeats)
race: $(STAMP)
	$(PY) -m neuron_fabric.experiments.ddp.race $(call smoke,--quick) --out $(REPORTS)

train: $(STAMP)
	$(PY) -m neuron_fabric.experiments.train.experiments --jobs $(JOBS) $(call smoke,--quick --out $(REPORTS)/quick,--out $(REPORTS))

# (SMOKE=1: one seed, two steps, batch 16, the hard task's rows of one policy of each kind,
# the stuck-lane fault, into the quick folder)
evidence: $(STAMP)
	$(PY) -m neuron_fabric.experiments.train.evidence --jobs $(JOBS) $(call smoke,--quick --out $(REPORTS)/quick,--out $(REPORTS))

train-full: $(STAMP)
	$(PY) -m neuron_fabric.experiments.train.experiments --jobs $(JOBS) $(call smoke,--quick --out $(REPORTS)/quick,--full --out $(REPORTS)/full)

train-quick: $(STAMP)
	$(PY) -m neuron_fabric.experiments.train.experiments --jobs $(JOBS) --quick --out $(REPORTS)/quick

# (SMOKE=1: one run of two steps, into the quick folder)
train-batch64: $(STAMP)
	$(PY) -m neuron_fabric.experiments.train.batch64 --jobs $(JOBS) $(call smoke,--quick --out $(REPORTS)/quick,--out $(REPORTS))

# (SMOKE=1: no runs, the middle of each grid, into the quick folder)
train-rates: $(STAMP)
	$(PY) -m neuron_fabric.experiments.train.experiments --select-only --jobs $(JOBS) $(call smoke,--quick --out $(REPORTS)/quick,--out $(REPORTS))

hierarchy: $(STAMP)
	$(PY) -m neuron_fabric.experiments.hierarchy.report --jobs $(JOBS) $(call smoke,--quick) --out $(REPORTS)

envelope: $(STAMP)
	$(PY) -m neuron_fabric.sim.envelope $(call smoke,--quick) --out $(REPORTS)

latency: $(STAMP)
	$(PY) -m neuron_fabric.sim.latency --profile paper $(call smoke,--line-bits 64)
	$(PY) -m neuron_fabric.sim.latency --profile full $(call smoke,--line-bits 64)

envelope-rtl: verilog
	$(PY) -m neuron_fabric.sim.envelope.rtl --verilog $(VERILOG_DIR)/neuron_fabric.v $(call smoke,--quick) --out $(REPORTS)

functional: $(STAMP)
	$(PY) -m neuron_fabric.sim.functional --line-bits $(LINE_BITS) --stages $(STAGES) --simulator $(SIM) $(call smoke,--elements 256)

# The release (hdl/export/release.py) of the configuration: the defaults
# unless LINE_BITS= ... are given (SMOKE=1: into the reports folder).
RELEASE_DIR ?= $(call smoke,$(REPORTS)/release,build/release)

release: $(STAMP)
	$(PY) -m neuron_fabric.hdl.export.release --line-bits $(LINE_BITS) --workers $(WORKERS) \
	    --stages $(STAGES) --regions $(REGIONS) --max-outstanding $(MAX_OUTSTANDING) \
	    --out $(RELEASE_DIR)

release-lint: release
	$(PY) -m neuron_fabric.sim.lint --release $(RELEASE_DIR)

# (SMOKE=1: the port tables are checked, not written)
regdocs: $(STAMP)
	$(PY) -m neuron_fabric.contract.regmap $(REGDOCS)
	$(PY) -m neuron_fabric.hdl.export.ports $(call smoke,--check) README.md docs/top.md

# (SMOKE=1: the 64-bit paper-profile core, as the flows' own smoke tests)
FLOW_SMOKE = $(call smoke,--line-bits 64 --profiles paper)

synth: $(STAMP)
	$(PY) -m neuron_fabric.synth.generic --jobs $(JOBS) $(FLOW_SMOKE)

route: $(STAMP)
	$(PY) -m neuron_fabric.synth.route --jobs $(JOBS) $(FLOW_SMOKE) $(call smoke,--smoke)

ge: synth
	$(PY) -m neuron_fabric.synth.ge

endpoints: $(STAMP)
	$(PY) -m neuron_fabric.synth.endpoints --jobs $(JOBS) $(FLOW_SMOKE) $(call smoke,--smoke --modules core,--modules core top)

sky130: $(STAMP)
	$(PY) -m neuron_fabric.synth.sky130 --jobs $(JOBS) $(FLOW_SMOKE) $(call smoke,--no-top)

summary: $(STAMP)
	$(PY) -m neuron_fabric.synth.summary --jobs $(JOBS) $(FLOW_SMOKE) $(call smoke,--no-top --smoke)

report: synth route ge endpoints sky130
	$(PY) -m neuron_fabric.synth.report

pilots: $(STAMP)
	$(PY) -m neuron_fabric.experiments.pilots --jobs $(JOBS) $(call smoke,--quick) --out $(REPORTS)

train-rtl: $(STAMP)
	$(PY) -m neuron_fabric.sim.cocotb_train $(call smoke,--line-bits 64 --quick) --out $(REPORTS)

# (SMOKE=1: the small top of the cocotb benches, one random batch after the
# directed phase, its files under build/configs/smoke)
configs: $(STAMP)
	$(PY) -m neuron_fabric.sim.configs --jobs $(JOBS) $(call smoke,--only L64_W4_S2_R4_O8_full --batches 1 --work build/configs/smoke) --out $(REPORTS)

# (SMOKE=1: a copy of README.md in the reports folder is rewritten instead)
figures: $(STAMP)
	$(call smoke,mkdir -p $(REPORTS) && cp README.md $(REPORTS)/README.md &&) $(PY) -m neuron_fabric.sim.figures --reports $(REPORTS) $(call smoke,--readme $(REPORTS)/README.md)

clean:
	rm -rf build
