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

.PHONY: all help venv verilog lint test test-quick test-long bench train train-quick hierarchy envelope latency envelope-rtl functional regdocs synth route ge endpoints sky130 summary report clean pilots train-rtl train-full

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
	@echo "make regdocs      regenerate docs/registers.md (and build/docs/registers.md) from contract/regmap.py"
	@echo "make lint         verilator --lint-only -Wall on the exported Verilog"
	@echo "make bench        golden-model throughput on a 64 MiB buffer; gradient runtime through the device model"
	@echo "make train        training experiments (Fig. 4/5, Tables 5/6) -> build/reports/training.*"
	@echo "make train-full   every training experiment: 5 seeds, whole grids, the batch-64 sweep -> build/reports/full/"
	@echo "make train-quick  seconds-long smoke run of the training experiments -> build/reports/quick/"
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
	    --profile $(PROFILE) --out-dir build/verilog --cache build/cache/verilog

lint: verilog
	$(PY) -m neuron_fabric.sim.lint build/verilog

test: $(STAMP)
	$(PY) -m pytest -n $(JOBS) --dist loadgroup --durations=15 -m "not long" tests

test-quick: $(STAMP)
	$(PY) -m pytest -n $(JOBS) --dist loadgroup -m "not slow and not long" tests

test-long: $(STAMP)
	$(PY) -m pytest -n $(JOBS) --dist loadgroup --durations=15 -m long tests

bench: $(STAMP)
	$(PY) -m neuron_fabric.sim.bench_golden
	$(PY) -m neuron_fabric.sim.bench_runtime

train: $(STAMP)
	$(PY) -m neuron_fabric.experiments.train.experiments --jobs $(JOBS) --out build/reports

train-full: $(STAMP)
	$(PY) -m neuron_fabric.experiments.train.experiments --jobs $(JOBS) --full --out build/reports/full

train-quick: $(STAMP)
	$(PY) -m neuron_fabric.experiments.train.experiments --jobs $(JOBS) --quick --out build/reports/quick

hierarchy: $(STAMP)
	$(PY) -m neuron_fabric.experiments.train.hierarchy_report --jobs $(JOBS) --out build/reports

envelope: $(STAMP)
	$(PY) -m neuron_fabric.sim.envelope --out build/reports

latency: $(STAMP)
	$(PY) -m neuron_fabric.sim.latency --profile paper
	$(PY) -m neuron_fabric.sim.latency --profile full

envelope-rtl: verilog
	$(PY) -m neuron_fabric.sim.envelope.rtl --out build/reports

functional: $(STAMP)
	$(PY) -m neuron_fabric.sim.functional --line-bits $(LINE_BITS) --stages $(STAGES) --simulator $(SIM)

regdocs: $(STAMP)
	$(PY) -m neuron_fabric.contract.regmap docs/registers.md build/docs/registers.md

synth: $(STAMP)
	$(PY) -m neuron_fabric.synth.generic --jobs $(JOBS)

route: $(STAMP)
	$(PY) -m neuron_fabric.synth.route --jobs $(JOBS)

ge: synth
	$(PY) -m neuron_fabric.synth.ge

endpoints: $(STAMP)
	$(PY) -m neuron_fabric.synth.endpoints --jobs $(JOBS) --modules core top

sky130: $(STAMP)
	$(PY) -m neuron_fabric.synth.sky130 --jobs $(JOBS)

summary: $(STAMP)
	$(PY) -m neuron_fabric.synth.summary --jobs $(JOBS)

report: synth route ge endpoints sky130
	$(PY) -m neuron_fabric.synth.report

pilots: $(STAMP)
	$(PY) -m neuron_fabric.experiments.pilots --jobs $(JOBS) --out build/reports

train-rtl: $(STAMP)
	$(PY) -m neuron_fabric.sim.cocotb_train --out build/reports

clean:
	rm -rf build
