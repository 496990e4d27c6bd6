// gemm_dot2 of gemm_mv for an f32 B: vec4s of B (pb a multiple of 4).
fn gemm_dot2(pa: u32, pb0: u32, pb1: u32, n: u32) -> vec2<f32> {
  var x0 = vec4<f32>(0.0);
  var x1 = vec4<f32>(0.0);
  var y0 = vec4<f32>(0.0);
  var y1 = vec4<f32>(0.0);
  let q0 = pb0 / 4u;
  let q1 = pb1 / 4u;
  let c = 4u * P.cs_a;
  var a = pa;
  var v = 0u;
  for (; v + 3u < n / 4u; v += 4u) {
    let a0 = mv_a4(a);
    let a1 = mv_a4(a + c);
    let a2 = mv_a4(a + 2u * c);
    let a3 = mv_a4(a + 3u * c);
    x0 = fma(a2, b_ld4(q0 + v + 2u), fma(a0, b_ld4(q0 + v), x0));
    y0 = fma(a2, b_ld4(q1 + v + 2u), fma(a0, b_ld4(q1 + v), y0));
    x1 = fma(a3, b_ld4(q0 + v + 3u), fma(a1, b_ld4(q0 + v + 1u), x1));
    y1 = fma(a3, b_ld4(q1 + v + 3u), fma(a1, b_ld4(q1 + v + 1u), y1));
    a += 4u * c;
  }
  for (; v < n / 4u; v++) {
    let a0 = mv_a4(a);
    x0 = fma(a0, b_ld4(q0 + v), x0);
    y0 = fma(a0, b_ld4(q1 + v), y0);
    a += c;
  }
  var e = 4u * v;
  for (; e < n; e++) {
    let ae = a_ld(a);
    x0.x = fma(ae, b_ld(pb0 + e), x0.x);
    y0.x = fma(ae, b_ld(pb1 + e), y0.x);
    a += P.cs_a;
  }
  let x = x0 + x1;
  let y = y0 + y1;
  return vec2<f32>((x.x + x.y) + (x.z + x.w), (y.x + y.y) + (y.z + y.w));
}
