# Two entry points for a fresh machine with Python 3.11 and pip:
#   make demo   installs everything into .venv, converts the bundled CNN training program and
#               runs the torch original and the conversion side by side (msmigrate parity)
#   make test   installs everything into .venv and runs the whole test suite
# torch is pinned first: 2.13.0 is the CPU build available locally; any other spec would pull
# CUDA wheels. numpy<2 because mindspore 2.10's extensions are built against NumPy 1.x.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install demo test clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[parity,test]'
	touch $(STAMP)

install: $(STAMP)

demo: install
	$(BIN)/msmigrate convert fixtures/programs/train_cnn.py -o build/demo --report build/demo/report.json
	@echo "--- converted program: build/demo/train_cnn.py"
	@cat build/demo/train_cnn.py
	@echo "--- msmigrate parity: the torch program vs its conversion, step by step"
	$(BIN)/msmigrate parity fixtures/programs/train_cnn.py --steps 4 --plot build/demo/parity.png

# msrun (MindSpore's launcher) starts its workers with the `python` found on PATH
test: install
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/python -m pytest -q -n 2 --dist loadgroup -p no:cacheprovider

clean:
	rm -rf $(VENV) build
