# Set-up and run targets. Each target creates the virtual environment on first use.
# PYTHON: any Python >= 3.12 (pyenv users: .python-version selects 3.12 in this folder).
PYTHON ?= python3.12
VENV   ?= .venv
BIN    := $(VENV)/bin
OUT    ?= out

.PHONY: example test test-fast clean

$(BIN)/hybridpriv: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

# The main job on the built-in example (real ACS 2012 survey data): choose a mean estimator for
# a public panel beside private groups of different epsilons, from public knowledge alone.
example: $(BIN)/hybridpriv
	$(BIN)/hybridpriv select --example grouped --out $(OUT)/example

# The full test suite on both cores (pytest alone runs the fast inner loop: -m "not slow").  Two
# pytest workers on two cores: each holds its BLAS to one thread (2 x 2 threads contend; measured
# 6% faster on the Wang tests).
ONE_THREAD := OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
test: $(BIN)/hybridpriv
	$(ONE_THREAD) $(BIN)/python -m pytest -n 2 --dist worksteal -q -m "slow or not slow"

# The fast inner loop: every test not marked slow (@pytest.mark.slow / pytestmark in the test files).
test-fast: $(BIN)/hybridpriv
	$(ONE_THREAD) $(BIN)/python -m pytest -n 2 --dist worksteal -q

clean:
	rm -rf $(VENV) $(OUT)
