# Typing stubs of the wgc package. The constants (ROW_MAJOR, UNARY_GELU,
# ...) are typed in the generated _consts.py.
from typing import Callable, Optional, Sequence, Tuple, Union

import numpy as np
import numpy.typing as npt

from ._consts import *  # noqa: F403

__version__: str
__all__: list[str]

Address = Union["DeviceArray", int, None]
Shape = Sequence[int]
DTypeLike = npt.DTypeLike

class WgcError(Exception):
    status: str
    code: Optional[int]
    def __init__(self, status: str, message: str, code: Optional[int] = ...) -> None: ...

def version() -> str: ...
def status_name(code: int) -> str: ...
def status_string(code: int) -> str: ...

class _Struct:
    def __eq__(self, other: object) -> bool: ...

class GemmEpilogue(_Struct):
    bias: int
    bias_kind: int
    activation: int
    def __init__(self, bias: Address = ..., bias_kind: int = ..., activation: int = ...) -> None: ...

class Conv2dDesc(_Struct):
    n: int
    c: int
    h: int
    w: int
    k: int
    r: int
    s: int
    stride_h: int
    stride_w: int
    pad_h: int
    pad_w: int
    dilation_h: int
    dilation_w: int
    groups: int
    def __init__(self, n: int = ..., c: int = ..., h: int = ..., w: int = ..., k: int = ...,
                 r: int = ..., s: int = ..., stride_h: int = ..., stride_w: int = ...,
                 pad_h: int = ..., pad_w: int = ..., dilation_h: int = ...,
                 dilation_w: int = ..., groups: int = ...) -> None: ...

class Pool2dDesc(_Struct):
    n: int
    c: int
    h: int
    w: int
    r: int
    s: int
    stride_h: int
    stride_w: int
    pad_h: int
    pad_w: int
    dilation_h: int
    dilation_w: int
    mode: int
    count_include_pad: int
    def __init__(self, n: int = ..., c: int = ..., h: int = ..., w: int = ..., r: int = ...,
                 s: int = ..., stride_h: int = ..., stride_w: int = ..., pad_h: int = ...,
                 pad_w: int = ..., dilation_h: int = ..., dilation_w: int = ...,
                 mode: int = ..., count_include_pad: int = ...) -> None: ...

class AttentionStrides(_Struct):
    batch: int
    head: int
    seq: int
    def __init__(self, batch: int = ..., head: int = ..., seq: int = ...) -> None: ...

class AttentionDesc(_Struct):
    batch: int
    heads: int
    heads_kv: int
    seq_q: int
    seq_kv: int
    head_dim: int
    scale: float
    causal: int
    head_dim_v: int
    softcap: float
    mask: int
    mask_stride: AttentionStrides
    q_stride: AttentionStrides
    k_stride: AttentionStrides
    v_stride: AttentionStrides
    o_stride: AttentionStrides
    def __init__(self, batch: int = ..., heads: int = ..., heads_kv: int = ...,
                 seq_q: int = ..., seq_kv: int = ..., head_dim: int = ...,
                 scale: float = ..., causal: int = ..., head_dim_v: int = ...,
                 softcap: float = ..., mask: Address = ...,
                 mask_stride: AttentionStrides = ..., q_stride: AttentionStrides = ...,
                 k_stride: AttentionStrides = ..., v_stride: AttentionStrides = ...,
                 o_stride: AttentionStrides = ...) -> None: ...

class RotaryDesc(_Struct):
    batch: int
    seq: int
    heads: int
    head_dim: int
    rotary_dim: int
    interleaved: int
    layout: int
    max_positions: int
    def __init__(self, batch: int = ..., seq: int = ..., heads: int = ..., head_dim: int = ...,
                 rotary_dim: int = ..., interleaved: int = ..., layout: int = ...,
                 max_positions: int = ...) -> None: ...

def conv2d_output_size(d: Conv2dDesc) -> Tuple[int, int]: ...
def pool2d_output_size(d: Pool2dDesc) -> Tuple[int, int]: ...

class Future:
    ctx: Context
    array: Optional[np.ndarray]
    status: Optional[str]
    def done(self) -> bool: ...
    def result(self, timeout: Optional[float] = ...) -> Optional[np.ndarray]: ...

class DeviceArray:
    ctx: Context
    ptr: int
    shape: Tuple[int, ...]
    dtype: np.dtype
    size: int
    nbytes: int
    @property
    def ndim(self) -> int: ...
    def free(self) -> None: ...
    def numpy(self) -> np.ndarray: ...
    def numpy_async(self, callback: Optional[Callable[[Future], None]] = ...) -> Future: ...
    def upload(self, data: npt.ArrayLike) -> None: ...

class Context:
    def __init__(self, backend: Union[str, int] = ..., power: Union[str, int] = ...,
                 cpu_threads: int = ..., max_binding_bytes: int = ...) -> None: ...
    def close(self) -> None: ...
    @property
    def closed(self) -> bool: ...
    def __enter__(self) -> Context: ...
    def __exit__(self, *exc: object) -> None: ...
    @property
    def backend(self) -> str: ...
    @property
    def adapter_name(self) -> str: ...
    def pipelines_compiled(self) -> int: ...
    def last_error(self) -> str: ...
    # memory
    def alloc(self, nbytes: int) -> int: ...
    def free(self, base: Address) -> None: ...
    def upload(self, dst: Address, src: np.ndarray) -> None: ...
    def download(self, dst: np.ndarray, src: Address, nbytes: Optional[int] = ...) -> np.ndarray: ...
    def download_async(self, dst: np.ndarray, src: Address, nbytes: Optional[int] = ...,
                       callback: Optional[Callable[[Future], None]] = ...) -> Future: ...
    def copy(self, dst: Address, src: Address, nbytes: int) -> None: ...
    def synchronize(self) -> None: ...
    def synchronize_async(self, callback: Optional[Callable[[Future], None]] = ...) -> Future: ...
    def poll(self) -> None: ...
    def empty(self, shape: Union[int, Shape], dtype: DTypeLike = ...) -> DeviceArray: ...
    def zeros(self, shape: Union[int, Shape], dtype: DTypeLike = ...) -> DeviceArray: ...
    def array(self, data: npt.ArrayLike, dtype: Optional[DTypeLike] = ...) -> DeviceArray: ...
    # operations: wgc.h's, the context first, a pointer and count as one sequence
    def gemm(self, layout: int, ta: int, tb: int, m: int, n: int, k: int, alpha: float,
             a: Address, lda: int, b: Address, ldb: int, beta: float, c: Address,
             ldc: int) -> None: ...
    def gemm_batched(self, layout: int, ta: int, tb: int, m: int, n: int, k: int,
                     alpha: float, a: Address, lda: int, stride_a: int, b: Address,
                     ldb: int, stride_b: int, beta: float, c: Address, ldc: int,
                     stride_c: int, batch_count: int) -> None: ...
    def gemm_ex(self, layout: int, ta: int, tb: int, m: int, n: int, k: int, alpha: float,
                a: Address, lda: int, b: Address, ldb: int, beta: float, c: Address,
                ldc: int, ep: Optional[GemmEpilogue] = ...) -> None: ...
    def gemm_batched_ex(self, layout: int, ta: int, tb: int, m: int, n: int, k: int,
                        alpha: float, a: Address, lda: int, stride_a: int, b: Address,
                        ldb: int, stride_b: int, beta: float, c: Address, ldc: int,
                        stride_c: int, batch_count: int,
                        ep: Optional[GemmEpilogue] = ...) -> None: ...
    def conv2d(self, d: Conv2dDesc, input: Address, filter: Address, bias: Address,
               output: Address) -> None: ...
    def pool2d(self, d: Pool2dDesc, input: Address, output: Address) -> None: ...
    def attention(self, d: AttentionDesc, q: Address, k: Address, v: Address,
                  o: Address) -> None: ...
    def reduce(self, op: int, input: Address, output: Address, shape: Shape,
               axis: int) -> None: ...
    def reduce_axes(self, op: int, input: Address, output: Address, shape: Shape,
                    axes: Shape) -> None: ...
    def argmax(self, input: Address, output: Address, shape: Shape, axis: int) -> None: ...
    def argmin(self, input: Address, output: Address, shape: Shape, axis: int) -> None: ...
    def unary(self, op: int, input: Address, output: Address, n: int) -> None: ...
    def unary_params(self, op: int, alpha: float, beta: float, input: Address,
                     output: Address, n: int) -> None: ...
    def binary(self, op: int, a: Address, b: Address, out: Address, n: int) -> None: ...
    def binary_broadcast(self, op: int, a: Address, shape_a: Shape, b: Address,
                         shape_b: Shape, out: Address) -> None: ...
    def where(self, cond: Address, shape_cond: Shape, a: Address, shape_a: Shape,
              b: Address, shape_b: Shape, out: Address) -> None: ...
    def softmax(self, input: Address, output: Address, shape: Shape, axis: int) -> None: ...
    def log_softmax(self, input: Address, output: Address, shape: Shape,
                    axis: int) -> None: ...
    def layer_norm(self, input: Address, scale: Address, bias: Address, output: Address,
                   shape: Shape, axis: int, epsilon: float) -> None: ...
    def rms_norm(self, input: Address, scale: Address, output: Address, shape: Shape,
                 axis: int, epsilon: float) -> None: ...
    def rotary_embedding(self, d: RotaryDesc, input: Address, position_ids: Address,
                         cos_cache: Address, sin_cache: Address,
                         output: Address) -> None: ...
    def copy_strided(self, dst: Address, dst_strides: Shape, src: Address,
                     src_strides: Shape, shape: Shape) -> None: ...
    def gather(self, data: Address, shape: Shape, axis: int, indices: Address,
               n_indices: int, output: Address) -> None: ...
