// Q4_0 for gemm_mv_q: four words of eight nibbles after the scale; word t
// holds elements 4t..4t+3 in its low nibbles and 16+4t.. in its high ones.
// A nibble q, xor 8 (mv_word), read as a signed 4-bit number is q - 8.
const MV_BLOCK_BYTES = 18u;
const MV_TOP = 0xf0000000u;
const MV_Q_UNIT = 3.725290298461914e-9; // 2^-28

fn mv_word(w: u32) -> u32 { return w ^ 0x88888888u; }

// r plus the products of the quants' word that ends at word w with A's
// elements 4t.. (l) and 16+4t.. (h): each nibble at the top of a word,
// times 2^28.
fn mv_step4(r: mv_run, w: u32, al: bool, m: vec2<u32>, l: vec4<f32>,
            h: vec4<f32>) -> mv_run {
  let hi = mv_word(b_w(w));
  let t = mv_tops(r.lo, hi, al, m);
  let ql = vec4<i32>(bitcast<i32>((t.x * 4096u) & MV_TOP),
                     bitcast<i32>((t.x * 16u) & MV_TOP),
                     bitcast<i32>((t.y * 4096u) & MV_TOP),
                     bitcast<i32>((t.y * 16u) & MV_TOP));
  let qh = vec4<i32>(bitcast<i32>((t.x * 256u) & MV_TOP),
                     bitcast<i32>(t.x & MV_TOP),
                     bitcast<i32>((t.y * 256u) & MV_TOP),
                     bitcast<i32>(t.y & MV_TOP));
  return mv_run(fma(h, vec4<f32>(qh), fma(l, vec4<f32>(ql), r.s)), hi);
}

// Four steps written out: a loop's every turn costs SwiftShader more than
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
  let l1 = mv_a4(a);
  let h1 = mv_a4(a + 4u * c);
  r0 = mv_step4(r0, w0 + 1u, al0, m0, l1, h1);
  r1 = mv_step4(r1, w1 + 1u, al1, m1, l1, h1);
  let l2 = mv_a4(a + c);
  let h2 = mv_a4(a + 5u * c);
  r0 = mv_step4(r0, w0 + 2u, al0, m0, l2, h2);
  r1 = mv_step4(r1, w1 + 2u, al1, m1, l2, h2);
  let l3 = mv_a4(a + 2u * c);
  let h3 = mv_a4(a + 6u * c);
  r0 = mv_step4(r0, w0 + 3u, al0, m0, l3, h3);
  r1 = mv_step4(r1, w1 + 3u, al1, m1, l3, h3);
  let l4 = mv_a4(a + 3u * c);
  let h4 = mv_a4(a + 7u * c);
  r0 = mv_step4(r0, w0 + 4u, al0, m0, l4, h4);
  r1 = mv_step4(r1, w1 + 4u, al1, m1, l4, h4);
  return mv_pair(r0.s, r1.s);
}
