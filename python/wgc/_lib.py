"""The shared library and the C signatures of its entry points.

libwgc.so sits beside this file in the wheel, with the pinned
libwgpu_native.so it loads through its $ORIGIN rpath, so nothing else has
to be installed or compiled.
"""

import ctypes
import os

from . import _consts
from ._descs import STRUCTS

_here = os.path.dirname(os.path.abspath(__file__))
lib = ctypes.CDLL(os.path.join(_here, "libwgc.so"))

status_t = ctypes.c_int
ptr_t = ctypes.c_uint64
size_t = ctypes.c_size_t
sizes_t = ctypes.POINTER(ctypes.c_size_t)
DONE = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_void_p)

# The ctypes structs must match the C ones byte for byte: a drift would
# corrupt the descs silently, so the package refuses to load instead.
for _name, (_size, _fields) in _consts.LAYOUTS.items():
    _cls = STRUCTS[_name]
    _got = (ctypes.sizeof(_cls), {f: getattr(_cls, f).offset for f in _fields})
    if _got != (_size, _fields) or len(_cls._fields_) != len(_fields):
        raise ImportError(f"wgc: {_name} does not match wgc.h's layout")


def _proto(name, restype, *argtypes):
    fn = getattr(lib, name)
    fn.restype = restype
    fn.argtypes = list(argtypes)
    return fn


ctx_t = ctypes.c_void_p
_proto("wgc_version", ctypes.c_char_p)
_proto("wgc_status_string", ctypes.c_char_p, ctypes.c_int)
_proto("wgc_status_name", ctypes.c_char_p, ctypes.c_int)
_proto("wgc_last_error", ctypes.c_char_p, ctx_t)
_proto("wgc_create", status_t, ctypes.c_void_p, ctypes.POINTER(ctx_t))
_proto("wgc_destroy", None, ctx_t)
_proto("wgc_backend_name", ctypes.c_char_p, ctx_t)
_proto("wgc_adapter_name", ctypes.c_char_p, ctx_t)
_proto("wgc_pipelines_compiled", size_t, ctx_t)
_proto("wgc_pipeline_cache_status", ctypes.c_char_p, ctx_t)
_proto("wgc_profile_start", status_t, ctx_t)
_proto("wgc_profile_stop", status_t, ctx_t)
_proto("wgc_profile_records", status_t, ctx_t, ctypes.c_void_p, size_t,
       ctypes.POINTER(size_t))
_proto("wgc_profile_trace", status_t, ctx_t, ctypes.c_char_p, size_t,
       ctypes.POINTER(size_t))
_proto("wgc_profile_write_trace", status_t, ctx_t, ctypes.c_char_p)
_proto("wgc_alloc", status_t, ctx_t, size_t, ctypes.POINTER(ptr_t))
_proto("wgc_free", status_t, ctx_t, ptr_t)
_proto("wgc_upload", status_t, ctx_t, ptr_t, ctypes.c_void_p, size_t)
_proto("wgc_download", status_t, ctx_t, ctypes.c_void_p, ptr_t, size_t)
_proto("wgc_download_async", status_t, ctx_t, ctypes.c_void_p, ptr_t, size_t,
       DONE, ctypes.c_void_p)
_proto("wgc_copy", status_t, ctx_t, ptr_t, ptr_t, size_t)
_proto("wgc_synchronize", status_t, ctx_t)
_proto("wgc_synchronize_async", status_t, ctx_t, DONE, ctypes.c_void_p)
_proto("wgc_compile_begin", status_t, ctx_t)
_proto("wgc_compile_end", status_t, ctx_t)
_proto("wgc_compile_end_async", status_t, ctx_t, DONE, ctypes.c_void_p)
_proto("wgc_poll", status_t, ctx_t)
_proto("wgc_conv2d_output_size", status_t, ctypes.c_void_p,
       ctypes.POINTER(size_t), ctypes.POINTER(size_t))
_proto("wgc_pool2d_output_size", status_t, ctypes.c_void_p,
       ctypes.POINTER(size_t), ctypes.POINTER(size_t))
_proto("wgc_dtype_name", ctypes.c_char_p, ctypes.c_int)
_proto("wgc_dtype_block_size", size_t, ctypes.c_int)
_proto("wgc_dtype_bytes", status_t, ctypes.c_int, size_t, ctypes.POINTER(size_t))
_proto("wgc_quantize", status_t, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int,
       size_t)
_proto("wgc_dequantize", status_t, ctypes.c_void_p, ctypes.c_int,
       ctypes.c_void_p, size_t)

# The operations, as "kind:name" lists in C argument order after the
# context. Kinds: e an enum or int, z a size_t, f a float, p a device
# address, s a sequence passed as (const size_t *, count), a a sequence
# passed as const size_t * whose length must equal the shape's, d a desc
# (its class name after a second colon), ep an optional gemm epilogue.
_GEMM = "e:layout e:ta e:tb z:m z:n z:k f:alpha p:a z:lda p:b z:ldb f:beta p:c z:ldc"
_GEMM_BATCHED = ("e:layout e:ta e:tb z:m z:n z:k f:alpha p:a z:lda z:stride_a "
                 "p:b z:ldb z:stride_b f:beta p:c z:ldc z:stride_c z:batch_count")
OPS = {
    "gemm": _GEMM,
    "gemm_batched": _GEMM_BATCHED,
    "gemm_ex": _GEMM + " ep:ep",
    "gemm_batched_ex": _GEMM_BATCHED + " ep:ep",
    "conv2d": "d:d:Conv2dDesc p:input p:filter p:bias p:output",
    "pool2d": "d:d:Pool2dDesc p:input p:output",
    "attention": "d:d:AttentionDesc p:q p:k p:v p:o",
    "reduce": "e:op p:input p:output s:shape z:axis",
    "reduce_axes": "e:op p:input p:output s:shape s:axes",
    "reduce_ex": "e:op p:input e:input_type p:output e:output_type s:shape "
                 "z:axis",
    "reduce_axes_ex": "e:op p:input e:input_type p:output e:output_type "
                      "s:shape s:axes",
    "argmax": "p:input p:output s:shape z:axis",
    "argmin": "p:input p:output s:shape z:axis",
    "unary": "e:op p:input p:output z:n",
    "unary_params": "e:op f:alpha f:beta p:input p:output z:n",
    "binary": "e:op p:a p:b p:out z:n",
    "binary_broadcast": "e:op p:a s:shape_a p:b s:shape_b p:out",
    "where": "p:cond s:shape_cond p:a s:shape_a p:b s:shape_b p:out",
    "unary_ex": "e:op p:input e:input_type p:output e:output_type z:n",
    "unary_params_ex": "e:op f:alpha f:beta p:input e:input_type p:output "
                       "e:output_type z:n",
    "binary_ex": "e:op p:a e:a_type p:b e:b_type p:out e:out_type z:n",
    "binary_broadcast_ex": "e:op p:a e:a_type s:shape_a p:b e:b_type "
                           "s:shape_b p:out e:out_type",
    "where_ex": "p:cond e:cond_type s:shape_cond p:a e:a_type s:shape_a "
                "p:b e:b_type s:shape_b p:out e:out_type",
    "softmax": "p:input p:output s:shape z:axis",
    "log_softmax": "p:input p:output s:shape z:axis",
    "layer_norm": "p:input p:scale p:bias p:output s:shape z:axis f:epsilon",
    "rms_norm": "p:input p:scale p:output s:shape z:axis f:epsilon",
    "softmax_ex": "p:input e:input_type p:output e:output_type s:shape z:axis",
    "log_softmax_ex": "p:input e:input_type p:output e:output_type s:shape "
                      "z:axis",
    "layer_norm_ex": "p:input e:input_type p:scale e:scale_type p:bias "
                     "e:bias_type p:output e:output_type s:shape z:axis "
                     "f:epsilon",
    "rms_norm_ex": "p:input e:input_type p:scale e:scale_type p:output "
                   "e:output_type s:shape z:axis f:epsilon",
    "rotary_embedding":
        "d:d:RotaryDesc p:input p:position_ids p:cos_cache p:sin_cache p:output",
    "copy_strided": "p:dst a:dst_strides p:src a:src_strides s:shape",
    "copy_strided_ex": "p:dst e:dst_type a:dst_strides p:src e:src_type "
                       "a:src_strides s:shape",
    "gather": "p:data s:shape z:axis p:indices z:n_indices p:output",
    "gather_ex": "p:data e:data_type s:shape z:axis p:indices z:n_indices "
                 "p:output e:output_type",
    "cast": "p:src e:src_type p:dst e:dst_type z:n",
}

_CTYPES = {"e": [ctypes.c_int], "z": [size_t], "f": [ctypes.c_float],
           "p": [ptr_t], "s": [sizes_t, size_t], "a": [sizes_t],
           "d": [ctypes.c_void_p], "ep": [ctypes.c_void_p]}


def parse(spec):
    """[(kind, name, desc class name or None)] of an OPS entry."""
    out = []
    for item in spec.split():
        parts = item.split(":")
        out.append((parts[0], parts[1], parts[2] if len(parts) > 2 else None))
    return out


for _op, _spec in OPS.items():
    _types = [t for kind, _, _ in parse(_spec) for t in _CTYPES[kind]]
    _proto("wgc_" + _op, status_t, ctx_t, *_types)
