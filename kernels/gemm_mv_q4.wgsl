// gemm_dot of gemm_mv for a Q4_0 B (pb at a block's start, n whole blocks):
// per block its scale once and four words of eight nibbles; word t holds
// elements 4t..4t+3 in its low nibbles and 16+4t.. in its high ones.
fn gemm_dot(pa: u32, pb: u32, n: u32) -> f32 {
  var acc = vec4<f32>(0.0);
  var a = pa;
  let sh = vec4<u32>(0u, 8u, 16u, 24u);
  for (var blk = pb / 32u; blk < (pb + n) / 32u; blk++) {
    let y = P.off[1] + blk * 18u;
    var sum = vec4<f32>(0.0);
    for (var t = 0u; t < 4u; t++) {
      let q = vec4<u32>(mv_q(y, t)) >> sh;
      let lo = vec4<f32>(q & vec4<u32>(15u)) - 8.0;
      let hi = vec4<f32>((q >> vec4<u32>(4u)) & vec4<u32>(15u)) - 8.0;
      sum = fma(lo, mv_a4(a + 4u * t * P.cs_a), sum);
      sum = fma(hi, mv_a4(a + (16u + 4u * t) * P.cs_a), sum);
    }
    a += 32u * P.cs_a;
    acc = fma(vec4<f32>(mv_d(y)), sum, acc);
  }
  return (acc.x + acc.y) + (acc.z + acc.w);
}
