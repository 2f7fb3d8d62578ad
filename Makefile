# `make run` and `make test` do all set-up: a virtualenv in .venv with trtbench installed (editable).
PYTHON ?= python3
VENV ?= .venv
STAMP := $(VENV)/.trtbench-installed

.PHONY: run test system

# scripts/install_venv.py: uv installs and byte-compiles on every core, from the sources pip is configured with
$(STAMP): pyproject.toml scripts/install_venv.py
	$(PYTHON) scripts/install_venv.py $(VENV) '.[test,openvino,serving,int8,timm,transformers,genai,history-postgres]'
	touch $(STAMP)

run: $(STAMP)
	$(VENV)/bin/trtbench --config configs/resnet34.yaml

system:  # the browser and PostgreSQL the tests drive, where missing (root on Debian; elsewhere those tests skip)
	scripts/system_packages.sh

# ruff first (pyproject.toml's [tool.ruff]); then two test processes, each test file on one of them (its module
# fixtures built once)
test: $(STAMP) system
	$(VENV)/bin/ruff check trtbench tests benchmarks scripts
	$(VENV)/bin/python -m pytest -q -n 2 --dist loadfile --no-loadscope-reorder
