"""Shared fixtures, and the harness's summary line: tools/run_tests.sh
sums every section's "N passed, N failed", which pytest does not print.
A skipped test counts as failed: no check here may be left out."""

import os

import numpy as np
import pytest
import wgc

BACKENDS = ["cpu", "webgpu"]


@pytest.fixture(scope="session", params=BACKENDS)
def ctx(request):
    # One context per backend for the operation tests: WebGPU compiles
    # each kernel once per context, and lavapipe compiles slowly.
    with wgc.Context(backend=request.param) as c:
        assert c.backend == request.param
        yield c


@pytest.fixture
def rng():
    return np.random.default_rng(20)


def pytest_runtest_logreport(report):
    if report.failed:
        print(f"\nFAIL {report.nodeid} ({report.when})")


def pytest_terminal_summary(terminalreporter):
    stats = terminalreporter.stats
    passed = len(stats.get("passed", []))
    failed = sum(len(stats.get(k, [])) for k in ("failed", "error", "skipped"))
    line = f"{passed} passed, {failed} failed"
    terminalreporter.write_line(line)
    path = os.environ.get("WGC_PY_SUMMARY")
    if path:
        with open(path, "w") as f:
            f.write(line + "\n")
