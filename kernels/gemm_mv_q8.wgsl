// gemm_dot of gemm_mv for a Q8_0 B (pb at a block's start, n whole blocks):
// per block its scale once and eight words of four int8 each; the block's
// products are summed, then scaled.
fn gemm_dot(pa: u32, pb: u32, n: u32) -> f32 {
  var acc = vec4<f32>(0.0);
  var a = pa;
  for (var blk = pb / 32u; blk < (pb + n) / 32u; blk++) {
    let y = P.off[1] + blk * 34u;
    var sum = vec4<f32>(0.0);
    for (var t = 0u; t < 8u; t++) {
      let q = mv_q(y, t);
      let qi = vec4<i32>(bitcast<i32>(q << 24u), bitcast<i32>(q << 16u),
                         bitcast<i32>(q << 8u), bitcast<i32>(q)) >>
               vec4<u32>(24u);
      sum = fma(vec4<f32>(qi), mv_a4(a), sum);
      a += 4u * P.cs_a;
    }
    acc = fma(vec4<f32>(mv_d(y)), sum, acc);
  }
  return (acc.x + acc.y) + (acc.z + acc.w);
}
