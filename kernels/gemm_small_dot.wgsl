// gemm_dot of gemm_small: n products of A and B from pa and pb on, at the
// general strides, in two accumulators for instruction-level parallelism.
fn gemm_dot(pa0: u32, pb0: u32, n: u32) -> f32 {
  var pa = pa0;
  var pb = pb0;
  var acc0 = 0.0f;
  var acc1 = 0.0f;
  var kk = 0u;
  for (; kk + 1u < n; kk += 2u) {
    acc0 = fma(a_ld(pa), b_ld(pb), acc0);
    acc1 = fma(a_ld(pa + P.cs_a), b_ld(pb + P.rs_b), acc1);
    pa += 2u * P.cs_a;
    pb += 2u * P.rs_b;
  }
  if (kk < n) {
    acc0 = fma(a_ld(pa), b_ld(pb), acc0);
  }
  return acc0 + acc1;
}
