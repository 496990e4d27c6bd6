"""The package around the operations: version and constants against
wgc.h, bad input, lifetime, threads, async readback, the typing stubs, the
bundled runtime and the README's example."""

import ast
import importlib.metadata
import inspect
import json
import os
import re
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
import wgc
from wgc import _lib

REPO = os.environ.get("WGC_REPO", os.path.join(os.path.dirname(__file__), "..", ".."))
HEADER = open(os.path.join(REPO, "include", "wgc.h")).read()
PKG = os.path.dirname(wgc.__file__)


def test_one_version():
    parts = [re.search(rf"#define WGC_VERSION_{p} (\d+)", HEADER).group(1)
             for p in ("MAJOR", "MINOR", "PATCH")]
    want = ".".join(parts)
    assert wgc.__version__ == want
    assert wgc.version() == want
    assert importlib.metadata.version("wgc") == want


def x_list(name):
    body = re.search(rf"#define {name}\(X\)(.*?)\n\n", HEADER, re.S).group(1)
    return re.findall(r"X\((\w+), (\w+)\)", body)


@pytest.mark.parametrize("family", ["REDUCE", "UNARY", "BINARY"])
def test_op_constants_follow_the_header_lists(family):
    ops = x_list(f"WGC_{family}_OPS")
    table = getattr(wgc, f"{family}_OPS")
    assert list(table) == [low for _, low in ops]
    for value, (upper, low) in enumerate(ops):
        assert getattr(wgc, f"{family}_{upper}") == value == table[low]


def test_status_names():
    names = [n for n, _ in x_list("WGC_STATUS_MAP")]
    for code, name in enumerate(names):
        assert wgc.status_name(code) == name.removeprefix("ERR_")
    assert wgc.status_string(1) == "invalid argument"
    assert wgc.ROW_MAJOR == 1 and wgc.CAUSAL_BOTTOM_RIGHT == 2


def test_every_entry_point_is_bound():
    entries = set(re.findall(r"WGC_API[^;(]*?\bwgc_(\w+)\(", HEADER))
    methods = {n for n in dir(wgc.Context) if not n.startswith("_")}
    module = set(wgc.__all__)
    # Entry points reached under another name, and the one left out:
    # wgc_create_async only helps where wgc_create cannot wait (the browser).
    other = {"create": "Context", "destroy": "close", "backend_name": "backend",
             "adapter_name": "adapter_name", "create_async": None}
    for name in sorted(entries):
        if name in other:
            assert other[name] is None or other[name] in methods | module
        else:
            assert name in methods | module, f"wgc_{name} has no binding"
    assert set(_lib.OPS) <= methods


def stub():
    return ast.parse(open(os.path.join(PKG, "__init__.pyi")).read())


def test_stub_declares_every_method_with_its_parameters():
    classes = {n.name: n for n in stub().body if isinstance(n, ast.ClassDef)}
    for cls_name in ("Context", "DeviceArray", "Future"):
        declared = {f.name: [a.arg for a in f.args.args]
                    for f in classes[cls_name].body if isinstance(f, ast.FunctionDef)}
        cls = getattr(wgc, cls_name)
        for name, member in inspect.getmembers(cls):
            if name.startswith("_"):
                continue
            assert name in declared, f"{cls_name}.{name} is missing from the stub"
            if inspect.isfunction(member):
                params = list(inspect.signature(member).parameters)
                assert declared[name] == params, f"{cls_name}.{name}"
    funcs = {n.name for n in stub().body if isinstance(n, ast.FunctionDef)}
    assert {n for n in wgc.__all__ if inspect.isfunction(getattr(wgc, n))} <= funcs
    assert {n for n in wgc.__all__ if inspect.isclass(getattr(wgc, n))} <= set(classes)
    assert os.path.exists(os.path.join(PKG, "py.typed"))


def test_bundled_runtime_is_the_pinned_one():
    # libwgc.so loads it from its own folder ($ORIGIN).
    with open(os.path.join(PKG, "libwgpu_native.so"), "rb") as f:
        bundled = f.read()
    with open(os.path.join(REPO, "third_party", "wgpu", "lib", "libwgpu_native.so"), "rb") as f:
        assert f.read() == bundled


# ---- bad input -----------------------------------------------------------------
@pytest.mark.parametrize("backend", ["cpu", "webgpu"])
def test_bad_input_raises_and_changes_nothing(backend):
    with wgc.Context(backend=backend) as ctx:
        a = ctx.array(np.ones(8, np.float32))
        out = ctx.array(np.full(8, 7, np.float32))
        with pytest.raises(wgc.WgcError) as e:
            ctx.unary(wgc.UNARY_RELU, a, out, 9)  # past the allocation
        assert e.value.status == "INVALID_ARGUMENT" and e.value.code == 1
        assert str(e.value) == ctx.last_error()
        assert str(e.value).startswith("wgc_unary: ") and "input" in str(e.value)
        with pytest.raises(wgc.WgcError) as e:
            ctx.unary(len(wgc.UNARY_OPS), a, out, 8)  # no such op
        assert e.value.status == "INVALID_ARGUMENT" and "op" in str(e.value)
        with pytest.raises(wgc.WgcError) as e:
            ctx.gemm(wgc.ROW_MAJOR, wgc.NO_TRANS, wgc.NO_TRANS, 2, 2, 2, 1.0,
                     a, 1, a, 2, 0.0, out, 2)  # lda < k
        assert e.value.status == "INVALID_ARGUMENT" and "lda" in str(e.value)
        with pytest.raises(wgc.WgcError) as e:
            ctx.unary(wgc.UNARY_RELU, a, out, -1)  # checked before C
        assert e.value.status == "INVALID_ARGUMENT" and "n = -1" in str(e.value)
        with pytest.raises(wgc.WgcError) as e:
            ctx.copy_strided(out, [1], a, [1, 1], [2, 2])  # strides short
        assert "dst_strides" in str(e.value)
        with pytest.raises(wgc.WgcError, match="dtype float64"):
            ctx.array(np.ones(3))
        with pytest.raises(TypeError):
            ctx.conv2d(wgc.Pool2dDesc(), a, a, 0, out)
        with wgc.Context(backend="cpu") as other:
            b = other.empty(8)
            with pytest.raises(wgc.WgcError, match="another context"):
                ctx.unary(wgc.UNARY_RELU, b, out, 8)
        freed = ctx.empty(8)
        freed.free()
        freed.free()  # a second free is a no-op
        with pytest.raises(wgc.WgcError) as e:
            ctx.unary(wgc.UNARY_RELU, freed, out, 8)
        assert e.value.status == "INVALID_ARGUMENT"
        np.testing.assert_array_equal(out.numpy(), np.full(8, 7, np.float32))


def test_bad_desc_and_bad_options():
    with pytest.raises(wgc.WgcError) as e:
        wgc.conv2d_output_size(wgc.Conv2dDesc(n=1, c=1, h=2, w=2, k=1, r=3, s=1))
    assert e.value.status == "INVALID_ARGUMENT" and "wgc_conv2d_output_size" in str(e.value)
    with pytest.raises(wgc.WgcError) as e:
        wgc.pool2d_output_size(wgc.Pool2dDesc(n=1, c=1, h=2, w=2, r=0, s=1))
    assert "pool2d" in str(e.value)
    with pytest.raises(wgc.WgcError, match="backend 'metal'"):
        wgc.Context(backend="metal")
    with pytest.raises(wgc.WgcError) as e:
        wgc.Context(backend=7)
    assert e.value.status == "INVALID_ARGUMENT" and "wgc_create" in str(e.value)


def test_no_adapter_status():
    # In a child: the runtime a process loaded stays loaded.
    code = ("import wgc\n"
            "try:\n    wgc.Context(backend='webgpu')\n"
            "except wgc.WgcError as e:\n    print(e.status, '|', e)\n")
    env = dict(os.environ, WGC_WGPU_LIBRARY="/nonexistent/libwgpu_native.so")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, timeout=60).stdout
    assert out.startswith("NO_ADAPTER | ") and "/nonexistent" in out


# ---- lifetime ---------------------------------------------------------------------
@pytest.mark.parametrize("backend", ["cpu", "webgpu"])
def test_arrays_outliving_their_context(backend):
    ctx = wgc.Context(backend=backend)
    a = ctx.array(np.arange(4, dtype=np.float32))
    fut = a.numpy_async()
    ctx.close()  # waits and fires the pending download with its status
    assert fut.status == "OK"
    np.testing.assert_array_equal(fut.result(), np.arange(4, dtype=np.float32))
    ctx.close()  # double close
    assert ctx.closed
    a.free()  # a no-op now
    with pytest.raises(wgc.WgcError, match="closed"):
        a.numpy()
    with pytest.raises(wgc.WgcError, match="closed"):
        ctx.empty(4)
    b = wgc.Context(backend=backend).array(np.ones(3, np.float32))
    assert b.ctx.backend == backend  # the array keeps its context alive
    del b, a, ctx  # collected in any order without a crash


def test_pipeline_cache_option(tmp_path):
    path = tmp_path / "cache"
    for _ in range(2):
        with wgc.Context(backend="webgpu", pipeline_cache=path) as ctx:
            status = ctx.pipeline_cache_status()
            assert status.startswith(f"pipeline cache {path}: ")
            a = ctx.array(-np.arange(8, dtype=np.float32))
            b = ctx.empty(8)
            ctx.unary(wgc.UNARY_ABS, a, b, 8)
            np.testing.assert_array_equal(b.numpy(), np.arange(8))
    # the second context found the first's cache (where the driver keeps one)
    assert "reused" in status or "nothing is persisted" in status
    with wgc.Context(backend="cpu", pipeline_cache=str(path)) as ctx:
        assert ctx.pipeline_cache_status() == ""
    with pytest.raises(TypeError):
        wgc.Context(backend="cpu", pipeline_cache=3)
    with pytest.raises(wgc.WgcError):
        wgc.Context(backend="cpu", pipeline_cache="a\0b")


def test_context_manager_and_gc_of_live_arrays():
    with wgc.Context(backend="cpu") as ctx:
        arrays = [ctx.array(np.full(16, i, np.float32)) for i in range(50)]
        for i in range(0, 50, 2):
            arrays[i] = None  # freed on collection
        assert arrays[49].numpy()[0] == 49
    assert ctx.closed


def test_array_collected_while_another_thread_holds_the_context():
    with wgc.Context(backend="cpu") as ctx:
        a = ctx.empty(4)
        base = a.ptr
        held, release = threading.Event(), threading.Event()

        def hold():
            with ctx._lock:
                held.set()
                release.wait(10)

        t = threading.Thread(target=hold)
        t.start()
        held.wait(10)
        del a  # the finalizer must not wait for the other thread
        assert ctx._graveyard == [base]
        release.set()
        t.join()
        ctx.poll()  # the next call frees it
        assert ctx._graveyard == []
        with pytest.raises(wgc.WgcError) as e:
            ctx.free(base)
        assert e.value.status == "INVALID_ARGUMENT"


# ---- threads and async ---------------------------------------------------------------
@pytest.mark.parametrize("backend", ["cpu", "webgpu"])
def test_two_threads_on_one_context(backend):
    errors = []
    with wgc.Context(backend=backend) as ctx:
        def work(seed):
            try:
                rng = np.random.default_rng(seed)
                for _ in range(30):
                    x = rng.uniform(-1, 1, 64).astype(np.float32)
                    a, out = ctx.array(x), ctx.empty(64)
                    ctx.unary(wgc.UNARY_NEG, a, out, 64)
                    got = out.numpy() if seed % 2 else out.numpy_async().result(timeout=60)
                    np.testing.assert_array_equal(got, -x)
            except BaseException as e:  # reported by the main thread
                errors.append(e)

        threads = [threading.Thread(target=work, args=(s,)) for s in (1, 2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not errors, errors


@pytest.mark.parametrize("backend", ["cpu", "webgpu"])
def test_async_readback(backend):
    with wgc.Context(backend=backend) as ctx:
        x = np.arange(12, dtype=np.float32).reshape(3, 4)
        a = ctx.array(x)
        seen = []
        fut = a.numpy_async(callback=seen.append)
        assert seen == []  # never inside the registering call
        got = fut.result(timeout=60)
        assert seen == [fut] and fut.status == "OK" and fut.done()
        assert got.shape == (3, 4) and got.dtype == np.float32
        np.testing.assert_array_equal(got, x)
        host = np.zeros(2, np.float32)
        f2 = ctx.download_async(host, a.ptr + 4 * 5, 8)
        sync = ctx.synchronize_async()
        ctx.synchronize()  # fires both
        assert f2.status == "OK" and sync.status == "OK" and sync.result() is None
        np.testing.assert_array_equal(host, [5, 6])
        idx = ctx.array(np.array([3, -1], np.int32))
        assert idx.numpy().dtype == np.int32
        with pytest.raises(wgc.WgcError) as e:
            ctx.download_async(np.zeros(4, np.float32), a.ptr + 40, 16, seen.append)
        assert e.value.status == "INVALID_ARGUMENT"
        ctx.synchronize()
        assert len(seen) == 1  # the rejected call's callback never fires


@pytest.mark.parametrize("backend", ["cpu", "webgpu"])
def test_compile_ahead(backend):
    with wgc.Context(backend=backend) as ctx:
        xs = np.linspace(-2, 2, 96, dtype=np.float32)
        x = ctx.array(xs)
        y = ctx.empty((96,))
        ctx.compile_begin()
        ctx.unary(wgc.UNARY_TANH, x, y, 96)
        ctx.binary(wgc.BINARY_MUL, x, y, y, 96)
        with pytest.raises(wgc.WgcError) as e:
            ctx.upload(y.ptr, np.ones(96, np.float32))
        assert e.value.status == "INVALID_ARGUMENT" and "compiling ahead" in str(e.value)
        assert ctx.pipelines_compiled() == 0
        ctx.compile_end_async().result(timeout=120)
        compiled = ctx.pipelines_compiled()
        assert (compiled >= 2) == (backend == "webgpu")
        np.testing.assert_array_equal(y.numpy(), np.zeros(96, np.float32))  # nothing ran
        ctx.unary(wgc.UNARY_TANH, x, y, 96)
        ctx.binary(wgc.BINARY_MUL, x, y, y, 96)
        got = y.numpy()
        assert ctx.pipelines_compiled() == compiled
        want = xs.astype(np.float64) * np.tanh(xs.astype(np.float64))
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
        with pytest.raises(wgc.WgcError):
            ctx.compile_end()  # not compiling ahead


@pytest.mark.parametrize("backend", ["cpu", "webgpu"])
def test_profile_records_and_trace(backend, tmp_path):
    with wgc.Context(backend=backend) as ctx:
        with pytest.raises(wgc.WgcError) as e:
            ctx.profile_records()  # never started
        assert e.value.status == "INVALID_ARGUMENT"
        x = ctx.array(np.linspace(-1, 1, 64, dtype=np.float32))
        y = ctx.empty((64,))
        ctx.profile_start()
        t0 = time.perf_counter()
        ctx.unary(wgc.UNARY_RELU, x, y, 64)
        ctx.binary(wgc.BINARY_ADD, x, y, y, 64)
        ctx.synchronize()
        wall_us = (time.perf_counter() - t0) * 1e6
        ctx.profile_stop()
        recs = ctx.profile_records()
        assert [r["name"] for r in recs] == ["wgc_unary", "wgc_binary"]
        for r in recs:
            assert 0 < r["duration_us"] <= wall_us
            assert r["source"] in (wgc.TIME_CPU, wgc.TIME_SUBMIT_TO_DONE, wgc.TIME_GPU)
            assert (r["launches"] > 0) == (backend == "webgpu")
        trace = json.loads(ctx.profile_trace())
        events = trace["traceEvents"] if isinstance(trace, dict) else trace
        assert [ev["name"] for ev in events if ev.get("ph") == "X"] == ["wgc_unary", "wgc_binary"]
        path = tmp_path / "trace.json"
        ctx.profile_write_trace(str(path))
        assert json.loads(path.read_text()) == trace


# ---- the README's example, word for word ------------------------------------------
def test_readme_example_runs(tmp_path):
    readme = open(os.path.join(REPO, "README.md")).read()
    blocks = re.findall(r"```python\n(.*?)```", readme, re.S)
    assert len(blocks) == 1, "README.md holds one python example"
    out = subprocess.run([sys.executable, "-c", blocks[0]], capture_output=True,
                         text=True, timeout=120, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
