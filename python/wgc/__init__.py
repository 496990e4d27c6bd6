"""wgc: BLAS/DNN operations on WebGPU (wgpu-native) or the CPU, over numpy.

    import numpy as np, wgc
    with wgc.Context(backend="auto") as ctx:
        a = ctx.array(np.ones((2, 3), np.float32))
        ...

Every operation of wgc.h is a Context method with the C name and the C
arguments after the context (a pointer and count pair is one sequence);
device addresses are DeviceArrays or integers (arr.ptr + 4*i); the
constants are wgc.h's without the WGC_ prefix. Failures raise WgcError.
"""

from ._consts import *  # noqa: F401,F403  (generated from wgc.h)
from ._consts import VERSION as __version__
from ._core import (Context, DeviceArray, Future, WgcError, conv2d_output_size,
                    dequantize, dtype_block_size, dtype_bytes, dtype_name,
                    pool2d_output_size, quantize, status_name, status_string,
                    version)
from ._descs import (AttentionDesc, AttentionStrides, Conv2dDesc, GemmEpilogue,
                     Pool2dDesc, RotaryDesc)

__all__ = ["Context", "DeviceArray", "Future", "WgcError", "version",
           "status_name", "status_string",
           "conv2d_output_size", "pool2d_output_size", "dtype_name",
           "dtype_block_size", "dtype_bytes", "quantize", "dequantize",
           "AttentionDesc",
           "AttentionStrides", "Conv2dDesc", "GemmEpilogue", "Pool2dDesc",
           "RotaryDesc"]
