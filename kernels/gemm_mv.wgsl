// Matrix-vector GEMM (m = 1, decoding) with B's k contiguous: gemm_small's
// main, but B is read whole words (or vec4s) at a time and decoded in
// registers by gemm_dot, which one of gemm_mv_f32, gemm_mv_h (f16, bf16),
// gemm_mv_q8 and gemm_mv_q4 defines (k contiguous, so pb steps by one per
// k); the host makes every column's start fit its reads. Their helpers
// follow.

// Four elements of A from pa on, P.cs_a apart.
fn mv_a4(pa: u32) -> vec4<f32> {
  return vec4<f32>(a_ld(pa), a_ld(pa + P.cs_a), a_ld(pa + 2u * P.cs_a),
                   a_ld(pa + 3u * P.cs_a));
}

// f16 bits (low 16) -> f32, exact and without branches: normal numbers
// rebias the exponent, inf and NaN (payload kept) rebias to 255,
// subnormals are m * 2^-24 in ordinary f32 arithmetic (normal in f32, so
// no flushing applies).
fn mv_f16(h: u32) -> f32 {
  let m = h & 0x7fffu;
  let nrm = (m << 13u) + select(0x38000000u, 0x70000000u, m >= 0x7c00u);
  let sub = bitcast<u32>(f32(m) * 5.9604644775390625e-8);
  return bitcast<f32>(select(nrm, sub, m < 0x400u) | ((h & 0x8000u) << 16u));
}
