#!/usr/bin/env bash
# The Python package's tests, as `make test-python` and the python section
# of `make test` run them: a fresh virtual environment under build/python
# that installs only the wheel and the pinned numpy and pytest (binary
# wheels: no compiler), then pytest over python/tests with the repository's
# python/ off sys.path, so `import wgc` is the installed wheel, and no
# bytecode written into the tree. The last line is the harness's
# "N passed, N failed" (python/tests/conftest.py counts).
set -uo pipefail
cd "$(dirname "$0")/.."
NUMPY_VERSION=2.1.3
PYTEST_VERSION=8.3.4
PYTHON3=${PYTHON3:-/usr/bin/python3}
venv=build/python/venv
summary=build/python/summary.txt
wheel=$(ls build/python/wgc-*.whl 2>/dev/null | head -n 1)
fail() {
  echo "FAIL python: $1"
  echo "0 passed, 1 failed"
  exit 1
}
[ -n "$wheel" ] || fail "no wheel in build/python (make python)"
rm -rf "$venv" "$summary"
"$PYTHON3" -m venv "$venv" || fail "python3 -m venv (Debian: python3-venv)"
"$venv/bin/pip" install --quiet --disable-pip-version-check --only-binary=:all: \
  "numpy==$NUMPY_VERSION" "pytest==$PYTEST_VERSION" "$wheel" ||
  fail "pip install of the wheel, numpy and pytest"
# importlib mode: pytest puts no test folder's parent on sys.path.
(cd python/tests && PYTHONDONTWRITEBYTECODE=1 WGC_PY_SUMMARY="$PWD/../../$summary" WGC_REPO="$PWD/../.." \
  ../../"$venv"/bin/python -m pytest -q -p no:cacheprovider --import-mode=importlib \
  "$@" .)
rc=$?
[ -s "$summary" ] || fail "pytest ended without a summary (exit $rc)"
cat "$summary"
read -r passed _ failed _ <"$summary"
[ "$rc" = 0 ] && [ "$failed" = 0 ]
