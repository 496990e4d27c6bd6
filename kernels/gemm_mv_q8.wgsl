// Q8_0 for gemm_mv_q: eight words of four int8 after the scale.
const MV_BLOCK_BYTES = 34u;
const MV_TOP = 0xff000000u;
const MV_Q_UNIT = 5.9604644775390625e-8; // 2^-24

fn mv_word(w: u32) -> u32 { return w; }

// r plus the products of the quants' word that ends at word w with a:
// each int8 at the top of a word, times 2^24.
fn mv_step8(r: mv_run, w: u32, al: bool, m: vec2<u32>,
            a: vec4<f32>) -> mv_run {
  let hi = b_w(w);
  let t = mv_tops(r.lo, hi, al, m);
  let q = vec4<i32>(bitcast<i32>((t.x * 256u) & MV_TOP),
                    bitcast<i32>(t.x & MV_TOP),
                    bitcast<i32>((t.y * 256u) & MV_TOP),
                    bitcast<i32>(t.y & MV_TOP));
  return mv_run(fma(a, vec4<f32>(q), r.s), hi);
}

// Eight steps written out: a loop's every turn costs SwiftShader more than
// its body.
fn mv_quants2(first0: mv_run, first1: mv_run, y0: u32, y1: u32, a: u32) -> mv_pair {
  let c = 4u * P.cs_a;
  let w0 = y0 >> 2u;
  let w1 = y1 >> 2u;
  let al0 = (y0 & 2u) != 0u;
  let al1 = (y1 & 2u) != 0u;
  let m0 = mv_tops_m(al0);
  let m1 = mv_tops_m(al1);
  var r0 = first0;
  var r1 = first1;
  let a1 = mv_a4(a);
  r0 = mv_step8(r0, w0 + 1u, al0, m0, a1);
  r1 = mv_step8(r1, w1 + 1u, al1, m1, a1);
  let a2 = mv_a4(a + c);
  r0 = mv_step8(r0, w0 + 2u, al0, m0, a2);
  r1 = mv_step8(r1, w1 + 2u, al1, m1, a2);
  let a3 = mv_a4(a + 2u * c);
  r0 = mv_step8(r0, w0 + 3u, al0, m0, a3);
  r1 = mv_step8(r1, w1 + 3u, al1, m1, a3);
  let a4 = mv_a4(a + 3u * c);
  r0 = mv_step8(r0, w0 + 4u, al0, m0, a4);
  r1 = mv_step8(r1, w1 + 4u, al1, m1, a4);
  let a5 = mv_a4(a + 4u * c);
  r0 = mv_step8(r0, w0 + 5u, al0, m0, a5);
  r1 = mv_step8(r1, w1 + 5u, al1, m1, a5);
  let a6 = mv_a4(a + 5u * c);
  r0 = mv_step8(r0, w0 + 6u, al0, m0, a6);
  r1 = mv_step8(r1, w1 + 6u, al1, m1, a6);
  let a7 = mv_a4(a + 6u * c);
  r0 = mv_step8(r0, w0 + 7u, al0, m0, a7);
  r1 = mv_step8(r1, w1 + 7u, al1, m1, a7);
  let a8 = mv_a4(a + 7u * c);
  r0 = mv_step8(r0, w0 + 8u, al0, m0, a8);
  r1 = mv_step8(r1, w1 + 8u, al1, m1, a8);
  return mv_pair(r0.s, r1.s);
}
