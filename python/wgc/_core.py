"""Contexts, device arrays and downloads over the C API.

A context is used from one thread at a time in C; here each context holds a
lock that every call on it takes, so threads may share one. Callbacks fire
from wgc_poll, wgc_synchronize or wgc_destroy, inside that lock.
"""

import ctypes
import inspect
import operator
import os
import threading
import time

import numpy as np

from . import _consts
from ._descs import STRUCTS, GemmEpilogue, Options, ProfileRecord
from ._lib import DONE, OPS, lib, parse, ptr_t, size_t

_OK = 0
_INVALID = "INVALID_ARGUMENT"
_U64 = 1 << 64
# float16 joins once the library has element types.
DTYPES = (np.dtype(np.float32), np.dtype(np.int32))


class WgcError(Exception):
    """A failed call: status is the status name ("INVALID_ARGUMENT", ...),
    code its value (None for a check made before reaching C), and the
    message wgc_last_error's sentence."""

    def __init__(self, status, message, code=None):
        super().__init__(message)
        self.status = status
        self.code = code


def _status_name(code):
    return lib.wgc_status_name(code).decode()


def _check(code, handle):
    if code != _OK:
        raise WgcError(_status_name(code), lib.wgc_last_error(handle).decode(), code)


def status_name(code):
    """ "OK", "INVALID_ARGUMENT", ... (wgc_status_name)."""
    return _status_name(code)


def status_string(code):
    """ "success", "invalid argument", ... (wgc_status_string)."""
    return lib.wgc_status_string(code).decode()


def version():
    """The linked library's "MAJOR.MINOR.PATCH" (wgc_version)."""
    return lib.wgc_version().decode()


def _output_size(fn, cname, d, cls):
    if not isinstance(d, cls):
        raise TypeError(f"{cname}: d must be a {cls.__name__}")
    p, q = size_t(), size_t()
    code = fn(ctypes.byref(d), ctypes.byref(p), ctypes.byref(q))
    if code != _OK:
        raise WgcError(_status_name(code), lib.wgc_last_error(None).decode(), code)
    return p.value, q.value


def dtype_name(t):
    """ "f32", "f16", ... (wgc_dtype_name)."""
    return lib.wgc_dtype_name(t).decode()


def dtype_block_size(t):
    """Elements per block of type t: 32 for Q8_0 and Q4_0, else 1."""
    return lib.wgc_dtype_block_size(t)


def dtype_bytes(t, n):
    """Bytes of n elements of type t (wgc_dtype_bytes)."""
    out = size_t()
    code = lib.wgc_dtype_bytes(t, n, ctypes.byref(out))
    if code != _OK:
        raise WgcError(_status_name(code), lib.wgc_last_error(None).decode(), code)
    return out.value


def quantize(x, dst_type):
    """The float32 values of x converted to dst_type (wgc_quantize), as a
    uint8 array of dtype_bytes(dst_type, x.size) bytes."""
    x = np.ascontiguousarray(x, dtype=np.float32).ravel()
    bytes_ = size_t()  # a bad type or count: quantize's own error below
    lib.wgc_dtype_bytes(dst_type, x.size, ctypes.byref(bytes_))
    out = np.zeros(max(bytes_.value, 1), np.uint8)
    code = lib.wgc_quantize(x.ctypes.data, out.ctypes.data, dst_type, x.size)
    if code != _OK:
        raise WgcError(_status_name(code), lib.wgc_last_error(None).decode(), code)
    return out[:bytes_.value]


def dequantize(data, src_type, n):
    """n elements of src_type held in the bytes of data, as float32
    (wgc_dequantize)."""
    raw = np.ascontiguousarray(data).view(np.uint8).ravel()
    out = np.zeros(n, np.float32)
    if raw.size < dtype_bytes(src_type, n):
        raise WgcError(_INVALID, f"wgc_dequantize: src holds {raw.size} bytes, "
                       f"fewer than {n} elements of {dtype_name(src_type)}")
    code = lib.wgc_dequantize(raw.ctypes.data, src_type, out.ctypes.data, n)
    if code != _OK:
        raise WgcError(_status_name(code), lib.wgc_last_error(None).decode(), code)
    return out


def conv2d_output_size(d):
    """(p, q), the output's height and width (wgc_conv2d_output_size)."""
    return _output_size(lib.wgc_conv2d_output_size, "wgc_conv2d_output_size",
                        d, STRUCTS["Conv2dDesc"])


def pool2d_output_size(d):
    """(p, q), the output's height and width (wgc_pool2d_output_size)."""
    return _output_size(lib.wgc_pool2d_output_size, "wgc_pool2d_output_size",
                        d, STRUCTS["Pool2dDesc"])


def _enum(value, table, what):
    if isinstance(value, str):
        key = value.upper()
        if key not in table:
            raise WgcError(_INVALID, f"wgc_create: {what} '{value}' is not one of "
                           + ", ".join(k.lower() for k in table))
        return table[key]
    return operator.index(value)


_BACKENDS = {"AUTO": _consts.BACKEND_AUTO, "WEBGPU": _consts.BACKEND_WEBGPU,
             "CPU": _consts.BACKEND_CPU}
_POWERS = {"DEFAULT": _consts.POWER_DEFAULT, "LOW": _consts.POWER_LOW,
           "HIGH": _consts.POWER_HIGH}


class Context:
    """One wgc_context: one device, one queue, one table of allocations.

    backend is "auto" (WebGPU when an adapter exists, else the CPU),
    "webgpu" or "cpu" (or BACKEND_*); the other options are wgc_options'.
    pipeline_cache (a path, str or bytes, or None) names a file in which
    compiled pipelines persist across processes; pipeline_cache_status()
    says what became of it.
    Use it as a context manager or call close(); arrays that outlive it
    become inert (free() is then a no-op, numpy() raises WgcError)."""

    def __init__(self, backend="auto", power="default", cpu_threads=0,
                 max_binding_bytes=0, pipeline_cache=None):
        if pipeline_cache is not None:
            try:
                pipeline_cache = os.fsencode(pipeline_cache)
            except TypeError:
                raise TypeError("wgc_create: pipeline_cache must be a path, not "
                                f"{type(pipeline_cache).__name__}") from None
            if b"\0" in pipeline_cache:
                raise WgcError(_INVALID, "wgc_create: pipeline_cache holds a NUL byte")
        opt = Options(backend=_enum(backend, _BACKENDS, "backend"),
                      power=_enum(power, _POWERS, "power"),
                      cpu_threads=_index("wgc_create", "cpu_threads", cpu_threads, 1 << 32),
                      max_binding_bytes=_index("wgc_create", "max_binding_bytes",
                                               max_binding_bytes, _U64),
                      pipeline_cache=pipeline_cache)
        handle = ctypes.c_void_p()
        self._lock = threading.RLock()
        self._handle = None
        # Futures registered and not yet fired: this keeps their
        # callbacks and destinations alive.
        self._pending = set()
        # Addresses of arrays collected while another thread held the lock;
        # the next call frees them (a finalizer must never wait for it).
        self._graveyard = []
        code = lib.wgc_create(ctypes.byref(opt), ctypes.byref(handle))
        if code != _OK:
            raise WgcError(_status_name(code), lib.wgc_last_error(None).decode(), code)
        self._handle = handle.value

    # ---- lifetime
    def close(self):
        """Waits for queued work, fires pending callbacks and releases the
        context (wgc_destroy). A second close is a no-op."""
        with self._lock:
            if self._handle is not None:
                handle, self._handle = self._handle, None
                lib.wgc_destroy(handle)

    @property
    def closed(self):
        return self._handle is None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        if getattr(self, "_handle", None) is not None:
            try:
                self.close()
            except Exception:
                pass

    def _h(self, cname):
        """The handle, for a call made under the lock."""
        if self._handle is None:
            raise WgcError(_INVALID, f"{cname}: the context is closed")
        while self._graveyard:
            lib.wgc_free(self._handle, self._graveyard.pop())
        return self._handle

    def _release(self, base):
        """Frees base from a finalizer: at once when the lock is free (or
        held by this thread), else at the next call."""
        if self._lock.acquire(blocking=False):
            try:
                if self._handle is not None:
                    lib.wgc_free(self._handle, base)
            finally:
                self._lock.release()
        else:
            self._graveyard.append(base)

    # ---- introspection
    @property
    def backend(self):
        """"webgpu" or "cpu" (wgc_backend_name)."""
        with self._lock:
            return lib.wgc_backend_name(self._h("wgc_backend_name")).decode()

    @property
    def adapter_name(self):
        with self._lock:
            return lib.wgc_adapter_name(self._h("wgc_adapter_name")).decode()

    def pipelines_compiled(self):
        with self._lock:
            return lib.wgc_pipelines_compiled(self._h("wgc_pipelines_compiled"))

    def pipeline_cache_status(self):
        """What became of the pipeline_cache option, as a sentence; "" when
        it was off or the backend is the CPU."""
        with self._lock:
            return lib.wgc_pipeline_cache_status(
                self._h("wgc_pipeline_cache_status")).decode(errors="replace")

    # ---- timing records (wgc_profile_*)
    def profile_start(self):
        """Begins recording one record per operation (earlier ones go)."""
        with self._lock:
            h = self._h("wgc_profile_start")
            _check(lib.wgc_profile_start(h), h)

    def profile_stop(self):
        """Stops recording; the records stay readable."""
        with self._lock:
            h = self._h("wgc_profile_stop")
            _check(lib.wgc_profile_stop(h), h)

    def profile_records(self):
        """The records whose work is done, in issue order, as dicts: name,
        shape, launches, source (TIME_GPU, TIME_SUBMIT_TO_DONE, TIME_CPU),
        start_us, duration_us. Never waits."""
        with self._lock:
            h = self._h("wgc_profile_records")
            count = size_t()
            _check(lib.wgc_profile_records(h, None, 0, ctypes.byref(count)), h)
            recs = (ProfileRecord * max(count.value, 1))()
            _check(lib.wgc_profile_records(h, recs, count.value, ctypes.byref(count)), h)
        return [{"name": r.name.decode(), "shape": r.shape.decode(), "launches": r.launches,
                 "source": r.source, "start_us": r.start_us, "duration_us": r.duration_us}
                for r in recs[:count.value]]

    def profile_trace(self):
        """The done records as Chrome trace-event JSON text."""
        with self._lock:
            h = self._h("wgc_profile_trace")
            need = size_t()
            _check(lib.wgc_profile_trace(h, None, 0, ctypes.byref(need)), h)
            buf = ctypes.create_string_buffer(need.value + 1)
            _check(lib.wgc_profile_trace(h, buf, need.value + 1, ctypes.byref(need)), h)
        return buf.value.decode()

    def profile_write_trace(self, path):
        """Writes profile_trace()'s text into the file path."""
        with self._lock:
            h = self._h("wgc_profile_write_trace")
            _check(lib.wgc_profile_write_trace(h, os.fsencode(path)), h)

    def last_error(self):
        """wgc_last_error of this context ("" before any failure)."""
        with self._lock:
            return lib.wgc_last_error(self._h("wgc_last_error")).decode()

    # ---- memory
    def alloc(self, nbytes):
        """A zero-filled allocation of nbytes; returns its base address."""
        nbytes = _index("wgc_alloc", "bytes", nbytes, _U64)
        out = ptr_t()
        with self._lock:
            h = self._h("wgc_alloc")
            _check(lib.wgc_alloc(h, nbytes, ctypes.byref(out)), h)
        return out.value

    def free(self, base):
        base = self._addr("wgc_free", "base", base)
        with self._lock:
            h = self._h("wgc_free")
            _check(lib.wgc_free(h, base), h)

    def upload(self, dst, src):
        """Copies the bytes of the numpy array src to the address dst."""
        dst = self._addr("wgc_upload", "dst", dst)
        src = _host("wgc_upload", "src", src, writable=False)
        with self._lock:
            h = self._h("wgc_upload")
            _check(lib.wgc_upload(h, dst, src.ctypes.data, src.nbytes), h)

    def download(self, dst, src, nbytes=None):
        """Blocks until the queued work before it is done, then copies
        nbytes (default: all of dst) from the address src into the
        contiguous numpy array dst."""
        dst = _host("wgc_download", "dst", dst, writable=True)
        src = self._addr("wgc_download", "src", src)
        nbytes = _nbytes("wgc_download", dst, nbytes)
        with self._lock:
            h = self._h("wgc_download")
            _check(lib.wgc_download(h, dst.ctypes.data, src, nbytes), h)
        return dst

    def download_async(self, dst, src, nbytes=None, callback=None):
        """Registers a download into the numpy array dst and returns a
        Future at once; it completes in a later poll(), synchronize() or
        Future.result(). callback(future) runs when it completes."""
        dst = _host("wgc_download_async", "dst", dst, writable=True)
        src = self._addr("wgc_download_async", "src", src)
        nbytes = _nbytes("wgc_download_async", dst, nbytes)
        fut = Future(self, dst, callback)
        with self._lock:
            h = self._h("wgc_download_async")
            self._pending.add(fut)
            code = lib.wgc_download_async(h, dst.ctypes.data, src, nbytes,
                                          fut._cb, None)
            if code != _OK:
                self._pending.discard(fut)
                _check(code, h)
        return fut

    def copy(self, dst, src, nbytes):
        dst = self._addr("wgc_copy", "dst", dst)
        src = self._addr("wgc_copy", "src", src)
        nbytes = _index("wgc_copy", "bytes", nbytes, _U64)
        with self._lock:
            h = self._h("wgc_copy")
            _check(lib.wgc_copy(h, dst, src, nbytes), h)

    def synchronize(self):
        """Waits for all queued work, then runs every due callback."""
        with self._lock:
            h = self._h("wgc_synchronize")
            _check(lib.wgc_synchronize(h), h)

    def synchronize_async(self, callback=None):
        """A Future that completes once all queued work has."""
        fut = Future(self, None, callback, "wgc_synchronize_async")
        with self._lock:
            h = self._h("wgc_synchronize_async")
            self._pending.add(fut)
            code = lib.wgc_synchronize_async(h, fut._cb, None)
            if code != _OK:
                self._pending.discard(fut)
                _check(code, h)
        return fut

    # ---- compiling ahead (wgc_compile_begin / _end)
    def compile_begin(self):
        """Until compile_end, operation calls check their arguments and ask
        for their kernels but run nothing; transfers raise."""
        with self._lock:
            h = self._h("wgc_compile_begin")
            _check(lib.wgc_compile_begin(h), h)

    def compile_end(self):
        """Compiles what the calls since compile_begin asked for,
        concurrently, and returns once all are compiled."""
        with self._lock:
            h = self._h("wgc_compile_end")
            _check(lib.wgc_compile_end(h), h)

    def compile_end_async(self, callback=None):
        """As compile_end; a Future that completes once all are compiled."""
        fut = Future(self, None, callback, "wgc_compile_end_async")
        with self._lock:
            h = self._h("wgc_compile_end_async")
            self._pending.add(fut)
            code = lib.wgc_compile_end_async(h, fut._cb, None)
            if code != _OK:
                self._pending.discard(fut)
                _check(code, h)
        return fut

    def poll(self):
        """Runs due callbacks; never waits."""
        with self._lock:
            h = self._h("wgc_poll")
            _check(lib.wgc_poll(h), h)

    # ---- device arrays
    def empty(self, shape, dtype=np.float32):
        """A zero-filled DeviceArray of shape and dtype (float32 or int32)."""
        return DeviceArray(self, _shape("empty", shape), _dtype(dtype))

    def zeros(self, shape, dtype=np.float32):
        return self.empty(shape, dtype)

    def array(self, data, dtype=None):
        """A DeviceArray holding a copy of data (a numpy array or anything
        numpy.asarray takes). Its dtype is kept (float32 or int32); pass
        dtype to convert others, e.g. float64 data to numpy.float32."""
        host = np.asarray(data) if dtype is None else np.asarray(data, dtype=dtype)
        arr = DeviceArray(self, host.shape, _dtype(host.dtype))
        try:
            self.upload(arr, np.ascontiguousarray(host))
        except BaseException:
            arr.free()
            raise
        return arr

    def _addr(self, cname, what, value):
        if value is None:
            return 0
        if isinstance(value, DeviceArray):
            if value.ctx is not self:
                raise WgcError(_INVALID, f"{cname}: {what} belongs to another context")
            return value.ptr
        return _index(cname, what, value, _U64)


class DeviceArray:
    """Device memory with a shape and a dtype: ctx, ptr (the address;
    ptr + 4*i addresses element i), shape, dtype, nbytes. It frees itself
    when collected, or with free()."""

    def __init__(self, ctx, shape, dtype):
        self.ctx = ctx
        self.shape = tuple(shape)
        self.dtype = dtype
        self.size = int(np.prod(self.shape, dtype=np.int64)) if self.shape else 1
        self.nbytes = self.size * dtype.itemsize
        # An empty array still gets an address, so any call may name it.
        self.ptr = ctx.alloc(max(self.nbytes, 4))
        self._freed = False

    @property
    def ndim(self):
        return len(self.shape)

    def free(self):
        """Frees the memory; a no-op when done already or when the context
        is closed (closing released it)."""
        ctx = self.ctx
        with ctx._lock:
            if self._freed or ctx._handle is None:
                self._freed = True
                return
            self._freed = True
            ctx.free(self.ptr)

    def __del__(self):
        if not getattr(self, "_freed", True):
            self._freed = True
            try:
                self.ctx._release(self.ptr)
            except Exception:
                pass

    def _check_live(self, cname):
        if self._freed and self.ctx._handle is not None:
            raise WgcError(_INVALID, f"{cname}: the array was freed")

    def numpy(self):
        """A numpy array of the contents; waits for the work before it."""
        self._check_live("wgc_download")
        out = np.empty(self.shape, self.dtype)
        return self.ctx.download(out, self.ptr, self.nbytes)

    def numpy_async(self, callback=None):
        """A Future whose result() is the numpy array of the contents."""
        self._check_live("wgc_download_async")
        out = np.empty(self.shape, self.dtype)
        return self.ctx.download_async(out, self.ptr, self.nbytes, callback)

    def upload(self, data):
        """Overwrites the contents with data (of this array's size)."""
        host = np.ascontiguousarray(data, dtype=self.dtype)
        if host.size != self.size:
            raise WgcError(_INVALID, f"wgc_upload: src has {host.size} elements, "
                           f"the array {self.size}")
        self.ctx.upload(self.ptr, host)

    def __repr__(self):
        return (f"DeviceArray(shape={self.shape}, dtype={self.dtype}, "
                f"ptr={self.ptr:#x})")


class Future:
    """A registered wgc_download_async or wgc_synchronize_async. done()
    polls once; result(timeout) polls until it completes and returns the
    download's destination array (None for a synchronize), or raises
    WgcError with the status it completed with; status is that name once
    complete, else None. callback(future) runs when it completes."""

    def __init__(self, ctx, dst, callback, cname="wgc_download_async"):
        self._cname = cname
        self.ctx = ctx
        self.array = dst
        self.status = None
        self._callback = callback
        self._cb = DONE(self._fire)

    def _fire(self, code, _user):
        self.status = _status_name(code)
        self.ctx._pending.discard(self)
        if self._callback is not None:
            self._callback(self)

    def done(self):
        if self.status is None:
            with self.ctx._lock:
                if self.ctx._handle is not None:
                    lib.wgc_poll(self.ctx._handle)
        return self.status is not None

    def result(self, timeout=None):
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self.done():
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"{self._cname}: not complete yet")
            time.sleep(0.0002)
        if self.status != "OK":
            raise WgcError(self.status, f"{self._cname}: completed with {self.status}")
        return self.array


def _index(cname, what, value, limit):
    try:
        v = operator.index(value)
    except TypeError:
        raise TypeError(f"{cname}: {what} must be an integer, not "
                        f"{type(value).__name__}") from None
    if not 0 <= v < limit:
        raise WgcError(_INVALID, f"{cname}: {what} = {v} is out of range")
    return v


def _int32(cname, what, value):
    try:
        v = operator.index(value)
    except TypeError:
        raise TypeError(f"{cname}: {what} must be an integer, not "
                        f"{type(value).__name__}") from None
    if not -(1 << 31) <= v < (1 << 31):
        raise WgcError(_INVALID, f"{cname}: {what} = {v} is out of range")
    return v


def _shape(cname, shape, what="shape"):
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    return tuple(_index(cname, what, d, _U64) for d in shape)


def _dtype(dtype):
    dt = np.dtype(dtype)
    if dt not in DTYPES:
        raise WgcError(_INVALID, f"wgc: dtype {dt} is not supported (float32, int32); "
                       "pass dtype=numpy.float32 to convert")
    return dt


def _host(cname, what, arr, writable):
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"{cname}: {what} must be a numpy array")
    if not arr.flags.c_contiguous or (writable and not arr.flags.writeable):
        raise WgcError(_INVALID, f"{cname}: {what} must be a contiguous"
                       + (" writable" if writable else "") + " numpy array")
    return arr


def _nbytes(cname, dst, nbytes):
    if nbytes is None:
        return dst.nbytes
    nbytes = _index(cname, "bytes", nbytes, _U64)
    if nbytes > dst.nbytes:
        raise WgcError(_INVALID, f"{cname}: bytes = {nbytes} exceeds dst's "
                       f"{dst.nbytes} bytes")
    return nbytes


def _make_op(op, spec):
    cname = "wgc_" + op
    fn = getattr(lib, cname)
    params = parse(spec)
    shape_name = next((n for k, n, _ in params if k == "s" and n == "shape"), None)

    def convert(self, bound):
        args = []
        arrays = []  # keep the ctypes arrays alive for the call
        for kind, name, cls in params:
            v = bound[name]
            if kind == "p":
                args.append(self._addr(cname, name, v))
            elif kind == "z":
                args.append(_index(cname, name, v, _U64))
            elif kind == "e":
                args.append(_int32(cname, name, v))
            elif kind == "f":
                args.append(float(v))
            elif kind in ("s", "a"):
                seq = _shape(cname, v, name)
                if kind == "a" and len(seq) != len(bound[shape_name]):
                    raise WgcError(_INVALID, f"{cname}: {name} has {len(seq)} "
                                   f"entries, shape {len(bound[shape_name])}")
                buf = (size_t * max(len(seq), 1))(*seq)
                arrays.append(buf)
                args.append(buf)
                if kind == "s":
                    args.append(len(seq))
            elif kind == "d":
                want = STRUCTS[cls]
                if not isinstance(v, want):
                    raise TypeError(f"{cname}: {name} must be a {cls}")
                args.append(ctypes.addressof(v))
            elif kind == "ep":
                if v is not None and not isinstance(v, GemmEpilogue):
                    raise TypeError(f"{cname}: {name} must be a GemmEpilogue or None")
                args.append(None if v is None else ctypes.addressof(v))
        return args, arrays

    sig = inspect.Signature(
        [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)] +
        [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                           default=None if k == "ep" else inspect.Parameter.empty)
         for k, n, _ in params])

    def method(self, *args, **kwargs):
        bound = sig.bind(self, *args, **kwargs)
        bound.apply_defaults()
        cargs, _keep = convert(self, bound.arguments)
        with self._lock:
            h = self._h(cname)
            _check(fn(h, *cargs), h)

    method.__name__ = op
    method.__qualname__ = "Context." + op
    method.__signature__ = sig
    method.__doc__ = (f"{cname}, with its C arguments after the context; a "
                      "(pointer, count) pair is one sequence. See wgc.h.")
    return method


for _op, _spec in OPS.items():
    setattr(Context, _op, _make_op(_op, _spec))
