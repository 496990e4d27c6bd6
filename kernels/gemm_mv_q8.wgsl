// gemm_dot2 of gemm_mv for a Q8_0 B (pb at a block's start, n whole
// blocks): per block and column its scale once and eight words of four
// int8 each (nine words read, each once); the block's products are summed,
// then scaled (a column with an infinite scale is redone by mv_exact, as
// the elements' own products give NaN where a factor is 0).
fn mv_q8(q: u32) -> vec4<f32> {
  return vec4<f32>(vec4<i32>(bitcast<i32>(q << 24u), bitcast<i32>(q << 16u),
                             bitcast<i32>(q << 8u), bitcast<i32>(q)) >>
                   vec4<u32>(24u));
}

// The block's products so far plus those of quant word t (the words lo,
// hi of a block at byte y, see mv_q), and hi for the next step.
struct mv_run { s: vec4<f32>, lo: u32 }

fn mv_step8(r: mv_run, w: u32, y: u32, a: vec4<f32>) -> mv_run {
  let hi = b_w(w);
  return mv_run(fma(a, mv_q8(mv_q(r.lo, hi, y)), r.s), hi);
}

fn gemm_dot2(pa: u32, pb0: u32, pb1: u32, n: u32) -> vec2<f32> {
  var x = vec4<f32>(0.0);
  var y = vec4<f32>(0.0);
  let c = 4u * P.cs_a;
  var a = pa;
  var inf0 = false;
  var inf1 = false;
  for (var blk = 0u; blk < n / 32u; blk++) {
    let y0 = P.off[1] + (pb0 / 32u + blk) * 34u;
    let y1 = P.off[1] + (pb1 / 32u + blk) * 34u;
    let w0 = y0 >> 2u;
    let w1 = y1 >> 2u;
    var r0 = mv_run(vec4<f32>(0.0), b_w(w0));
    var r1 = mv_run(vec4<f32>(0.0), b_w(w1));
    let d0 = mv_d(r0.lo, y0);
    let d1 = mv_d(r1.lo, y1);
    // eight steps written out: a loop's every turn costs SwiftShader more
    // than its body
    let a1 = mv_a4(a);
    r0 = mv_step8(r0, w0 + 1u, y0, a1);
    r1 = mv_step8(r1, w1 + 1u, y1, a1);
    let a2 = mv_a4(a + 1u * c);
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
    a += 8u * c;
    x = fma(vec4<f32>(d0), r0.s, x);
    y = fma(vec4<f32>(d1), r1.s, y);
    inf0 = inf0 || mv_inf(d0);
    inf1 = inf1 || mv_inf(d1);
  }
  return vec2<f32>(mv_exact(inf0, pa, pb0, n, (x.x + x.y) + (x.z + x.w)),
                   mv_exact(inf1, pa, pb1, n, (y.x + y.y) + (y.z + y.w)));
}
