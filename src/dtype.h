/* Element conversions shared by the host helpers (dtype.c) and the CPU
 * backend's wgc_cast (cpu/cast.c): the reference the WebGPU kernels
 * (kernels/dtype.wgsl, cast.wgsl) reproduce bit for bit. */
#ifndef WGC_DTYPE_H
#define WGC_DTYPE_H

#include "wgc.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Elements per block and bytes per block of a valid type. */
size_t wgc_dtype_block(wgc_dtype t);
size_t wgc_dtype_block_bytes(wgc_dtype t);
bool wgc_dtype_valid(wgc_dtype t);

/* Converts elements [i0, i0 + n) of src (type st) into the same elements
 * of dst (type dt); i0 and n are whole blocks of both types. src and dst
 * point at element 0 and may be unaligned. */
void wgc_dtype_convert(const void *src, wgc_dtype st, void *dst, wgc_dtype dt,
                       size_t i0, size_t n);

/* Elements [si, si + n) of src (type st, any but I32) into elements
 * [di, di + n) of dst (F32, F16 or BF16), each converted as wgc_cast does,
 * NaN payloads included; neither run need be whole blocks. */
void wgc_dtype_convert_run(const void *src, wgc_dtype st, size_t si, void *dst,
                           wgc_dtype dt, size_t di, size_t n);

/* Scalar conversions on the bits (see wgc_cast in wgc.h). */
uint16_t wgc_f32_to_f16(uint32_t f32_bits);
uint16_t wgc_f32_to_bf16(uint32_t f32_bits);
uint32_t wgc_f16_to_f32(uint16_t h);

/* GEMM's typed operands (cpu/gemm.c). Element i of src (type t, any
 * type but I32) as a float, exactly. */
float wgc_dtype_load(const void *src, wgc_dtype t, size_t i);
/* Elements [i0, i0 + n) of src (type t, not I32) into dst[0 .. n),
 * exactly; i0 and n need not be whole blocks. */
void wgc_dtype_load_run(const void *src, wgc_dtype t, size_t i0, size_t n,
                        float *dst);
/* Element i of dst (F32, F16 or BF16) := v, rounded once to nearest even
 * (overflow to infinity; a NaN stays a NaN). */
void wgc_dtype_store(void *dst, wgc_dtype t, size_t i, double v);
/* Elements [i0, i0 + n) of dst (F32, F16 or BF16) := src[0 .. n), as
 * wgc_dtype_store does each. */
void wgc_dtype_store_run(void *dst, wgc_dtype t, size_t i0, const float *src,
                         size_t n);
/* The same from doubles, each rounded once as wgc_dtype_store does. */
void wgc_dtype_store_doubles(void *dst, wgc_dtype t, size_t i0,
                             const double *src, size_t n);

#endif
