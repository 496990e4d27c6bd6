// Q8_0 for gemm_mv_q: eight words of four int8 after the scale.
const MV_BLOCK_BYTES = 34u;

fn mv_q8(q: u32) -> vec4<f32> {
  return vec4<f32>(vec4<i32>(bitcast<i32>(q << 24u), bitcast<i32>(q << 16u),
                             bitcast<i32>(q << 8u), bitcast<i32>(q)) >>
                   vec4<u32>(24u));
}

// r plus the products of the quants' word that ends at word w with a.
fn mv_step8(r: mv_run, w: u32, y: u32, a: vec4<f32>) -> mv_run {
  let hi = b_w(w);
  return mv_run(fma(a, mv_q8(mv_q(r.lo, hi, y)), r.s), hi);
}

// Eight steps written out: a loop's every turn costs SwiftShader more than
// its body.
fn mv_quants2(first0: mv_run, first1: mv_run, y0: u32, y1: u32, a: u32) -> mv_pair {
  let c = 4u * P.cs_a;
  let w0 = y0 >> 2u;
  let w1 = y1 >> 2u;
  var r0 = first0;
  var r1 = first1;
  let a1 = mv_a4(a);
  r0 = mv_step8(r0, w0 + 1u, y0, a1);
  r1 = mv_step8(r1, w1 + 1u, y1, a1);
  let a2 = mv_a4(a + c);
  r0 = mv_step8(r0, w0 + 2u, y0, a2);
  r1 = mv_step8(r1, w1 + 2u, y1, a2);
  let a3 = mv_a4(a + 2u * c);
  r0 = mv_step8(r0, w0 + 3u, y0, a3);
  r1 = mv_step8(r1, w1 + 3u, y1, a3);
  let a4 = mv_a4(a + 3u * c);
  r0 = mv_step8(r0, w0 + 4u, y0, a4);
  r1 = mv_step8(r1, w1 + 4u, y1, a4);
  let a5 = mv_a4(a + 4u * c);
  r0 = mv_step8(r0, w0 + 5u, y0, a5);
  r1 = mv_step8(r1, w1 + 5u, y1, a5);
  let a6 = mv_a4(a + 5u * c);
  r0 = mv_step8(r0, w0 + 6u, y0, a6);
  r1 = mv_step8(r1, w1 + 6u, y1, a6);
  let a7 = mv_a4(a + 6u * c);
  r0 = mv_step8(r0, w0 + 7u, y0, a7);
  r1 = mv_step8(r1, w1 + 7u, y1, a7);
  let a8 = mv_a4(a + 7u * c);
  r0 = mv_step8(r0, w0 + 8u, y0, a8);
  r1 = mv_step8(r1, w1 + 8u, y1, a8);
  return mv_pair(r0.s, r1.s);
}
