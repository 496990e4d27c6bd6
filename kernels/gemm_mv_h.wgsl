// gemm_dot of gemm_mv for an f16 or bf16 B (MV_BF16): a u32 word holds two
// elements, four words a step (pb + the operand's offset even).
fn mv_h2(w: u32) -> vec2<f32> {
  if (MV_BF16) {
    return vec2<f32>(bitcast<f32>(w << 16u), bitcast<f32>(w & 0xffff0000u));
  }
  return vec2<f32>(mv_f16(w & 0xffffu), mv_f16(w >> 16u));
}

fn gemm_dot(pa: u32, pb: u32, n: u32) -> f32 {
  var acc0 = vec4<f32>(0.0);
  var acc1 = vec4<f32>(0.0);
  let w0 = (P.off[1] + pb) >> 1u;
  var a = pa;
  var v = 0u;
  for (; v < n / 8u; v++) {
    let w = w0 + 4u * v;
    let b0 = vec4<f32>(mv_h2(b_w(w)), mv_h2(b_w(w + 1u)));
    let b1 = vec4<f32>(mv_h2(b_w(w + 2u)), mv_h2(b_w(w + 3u)));
    acc0 = fma(mv_a4(a), b0, acc0);
    acc1 = fma(mv_a4(a + 4u * P.cs_a), b1, acc1);
    a += 8u * P.cs_a;
  }
  for (var e = 8u * v; e < n; e++) {
    acc0.x = fma(a_ld(a), b_ld(pb + e), acc0.x);
    a += P.cs_a;
  }
  let acc = acc0 + acc1;
  return (acc.x + acc.y) + (acc.z + acc.w);
}
