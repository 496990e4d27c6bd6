"""The C structs of wgc.h as ctypes structs: the same fields, names and
defaults (all zero), so a desc reads as it does in C. A device address
field also takes a DeviceArray."""

import ctypes

_size = ctypes.c_size_t
_int = ctypes.c_int
_float = ctypes.c_float
_ptr = ctypes.c_uint64


class _Struct(ctypes.Structure):
    def __init__(self, *args, **kwargs):
        # Device addresses may be given as arrays, as to the operations.
        for key, value in list(kwargs.items()):
            if hasattr(value, "ptr") and not isinstance(value, int):
                kwargs[key] = value.ptr
            elif value is None:
                kwargs[key] = 0
        super().__init__(*args, **kwargs)

    def __setattr__(self, key, value):
        if hasattr(value, "ptr") and not isinstance(value, int):
            value = value.ptr
        super().__setattr__(key, value)

    def __repr__(self):
        fields = ", ".join(f"{name}={getattr(self, name)!r}"
                           for name, _ in self._fields_)
        return f"{type(self).__name__}({fields})"

    def __eq__(self, other):
        return type(self) is type(other) and bytes(self) == bytes(other)

    __hash__ = None


class Options(_Struct):
    _fields_ = [("backend", _int), ("power", _int), ("cpu_threads", ctypes.c_uint),
                ("max_binding_bytes", _size), ("profile", _int),
                ("pipeline_cache", ctypes.c_char_p)]


class GemmEpilogue(_Struct):
    _fields_ = [("bias", _ptr), ("bias_kind", _int), ("activation", _int),
                ("a_type", _int), ("b_type", _int), ("c_type", _int),
                ("bias_type", _int)]


class Conv2dDesc(_Struct):
    _fields_ = [(f, _size) for f in ("n", "c", "h", "w", "k", "r", "s",
                                      "stride_h", "stride_w", "pad_h", "pad_w",
                                      "dilation_h", "dilation_w", "groups")] + [
        (f, _int) for f in ("input_type", "filter_type", "bias_type",
                            "output_type")]


class Pool2dDesc(_Struct):
    _fields_ = [(f, _size) for f in ("n", "c", "h", "w", "r", "s", "stride_h",
                                      "stride_w", "pad_h", "pad_w",
                                      "dilation_h", "dilation_w")] + [
        ("mode", _int), ("count_include_pad", _int), ("input_type", _int),
        ("output_type", _int)]


class AttentionStrides(_Struct):
    _fields_ = [("batch", _size), ("head", _size), ("seq", _size)]


class AttentionDesc(_Struct):
    _fields_ = [(f, _size) for f in ("batch", "heads", "heads_kv", "seq_q",
                                      "seq_kv", "head_dim")] + [
        ("scale", _float), ("causal", _int), ("head_dim_v", _size),
        ("softcap", _float), ("mask", _ptr)] + [
        (f, AttentionStrides) for f in ("mask_stride", "q_stride", "k_stride",
                                        "v_stride", "o_stride")] + [
        (f, _int) for f in ("q_type", "k_type", "v_type", "o_type",
                            "mask_type")]


class RotaryDesc(_Struct):
    _fields_ = [(f, _size) for f in ("batch", "seq", "heads", "head_dim",
                                      "rotary_dim")] + [
        ("interleaved", _int), ("layout", _int), ("max_positions", _size),
        ("input_type", _int), ("output_type", _int), ("cache_type", _int)]


class ProfileRecord(_Struct):
    _fields_ = [("name", ctypes.c_char * 32), ("shape", ctypes.c_char * 96),
                ("launches", ctypes.c_uint32), ("source", _int),
                ("start_us", ctypes.c_double), ("duration_us", ctypes.c_double)]


STRUCTS = {cls.__name__: cls for cls in (Options, GemmEpilogue, Conv2dDesc,
                                          Pool2dDesc, AttentionStrides,
                                          AttentionDesc, RotaryDesc,
                                          ProfileRecord)}
