// gemm_dot of gemm_mv for an f32 B: a vec4 of B a step (pb a multiple of 4).
fn gemm_dot(pa: u32, pb: u32, n: u32) -> f32 {
  var acc0 = vec4<f32>(0.0);
  var acc1 = vec4<f32>(0.0);
  let q = pb / 4u;
  var a = pa;
  var v = 0u;
  // two vec4s a turn: two chains of fma
  for (; v + 1u < n / 4u; v += 2u) {
    acc0 = fma(mv_a4(a), b_ld4(q + v), acc0);
    acc1 = fma(mv_a4(a + 4u * P.cs_a), b_ld4(q + v + 1u), acc1);
    a += 8u * P.cs_a;
  }
  var e = 4u * v;
  for (; e < n; e++) {
    acc0.x = fma(a_ld(a), b_ld(pb + e), acc0.x);
    a += P.cs_a;
  }
  let acc = acc0 + acc1;
  return (acc.x + acc.y) + (acc.z + acc.w);
}
