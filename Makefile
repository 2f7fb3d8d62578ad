# `make run` and `make test` do all set-up: a virtualenv in .venv with trtbench installed (editable).
PYTHON ?= python3
VENV ?= .venv
STAMP := $(VENV)/.trtbench-installed

.PHONY: run test system

# pip byte-compiles one file at a time: it installs without, then compileall compiles site-packages on every core
# (files no Python of this version parses, such as torch's py312 test helpers, left as pip leaves them)
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --no-compile -e '.[test,openvino,serving,int8,timm,transformers,genai,history-postgres]'
	$(VENV)/bin/python -c "import compileall, sysconfig; compileall.compile_dir(sysconfig.get_path('purelib'), quiet=2, workers=0)"
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
