// Q4_0 for gemm_mv_q: four words of eight nibbles after the scale; word t
// holds elements 4t..4t+3 in its low nibbles and 16+4t.. in its high ones.
// A nibble q, xor 8, read as a signed 4-bit number is q - 8.
const MV_BLOCK_BYTES = 18u;

// r plus the products of the quants' word that ends at word w with A's
// elements 4t.. (l) and 16+4t.. (h).
fn mv_step4(r: mv_run, w: u32, y: u32, l: vec4<f32>, h: vec4<f32>) -> mv_run {
  let hi = b_w(w);
  let x = vec4<u32>(mv_q(r.lo, hi, y) ^ 0x88888888u);
  let ql = bitcast<vec4<i32>>(x << vec4<u32>(28u, 20u, 12u, 4u)) >> vec4<u32>(28u);
  let qh = bitcast<vec4<i32>>(x << vec4<u32>(24u, 16u, 8u, 0u)) >> vec4<u32>(28u);
  return mv_run(fma(h, vec4<f32>(qh), fma(l, vec4<f32>(ql), r.s)), hi);
}

// Four steps written out: a loop's every turn costs SwiftShader more than
// its body.
fn mv_quants2(first0: mv_run, first1: mv_run, y0: u32, y1: u32, a: u32) -> mv_pair {
  let c = 4u * P.cs_a;
  let w0 = y0 >> 2u;
  let w1 = y1 >> 2u;
  var r0 = first0;
  var r1 = first1;
  let l1 = mv_a4(a);
  let h1 = mv_a4(a + 4u * c);
  r0 = mv_step4(r0, w0 + 1u, y0, l1, h1);
  r1 = mv_step4(r1, w1 + 1u, y1, l1, h1);
  let l2 = mv_a4(a + c);
  let h2 = mv_a4(a + 5u * c);
  r0 = mv_step4(r0, w0 + 2u, y0, l2, h2);
  r1 = mv_step4(r1, w1 + 2u, y1, l2, h2);
  let l3 = mv_a4(a + 2u * c);
  let h3 = mv_a4(a + 6u * c);
  r0 = mv_step4(r0, w0 + 3u, y0, l3, h3);
  r1 = mv_step4(r1, w1 + 3u, y1, l3, h3);
  let l4 = mv_a4(a + 3u * c);
  let h4 = mv_a4(a + 7u * c);
  r0 = mv_step4(r0, w0 + 4u, y0, l4, h4);
  r1 = mv_step4(r1, w1 + 4u, y1, l4, h4);
  return mv_pair(r0.s, r1.s);
}
