// gemm_dot2 of gemm_mv for a Q4_0 B (pb at a block's start, n whole
// blocks): per block and column its scale once and four words of eight
// nibbles (five words read, each once); word t holds elements 4t..4t+3 in
// its low nibbles and 16+4t.. in its high ones. A nibble q, xor 8, read as
// a signed 4-bit number is q - 8. The block's products are summed, then
// scaled (a column with an infinite scale is redone by mv_exact, as the
// elements' own products give NaN where a factor is 0).

// The block's products so far plus those of quant word t (the words lo,
// hi of a block at byte y, see mv_q) with A's elements 4t.. (l) and
// 16+4t.. (h), and hi for the next step.
struct mv_run { s: vec4<f32>, lo: u32 }

fn mv_step4(r: mv_run, w: u32, y: u32, l: vec4<f32>, h: vec4<f32>) -> mv_run {
  let hi = b_w(w);
  let x = vec4<u32>(mv_q(r.lo, hi, y) ^ 0x88888888u);
  let ql = bitcast<vec4<i32>>(x << vec4<u32>(28u, 20u, 12u, 4u)) >> vec4<u32>(28u);
  let qh = bitcast<vec4<i32>>(x << vec4<u32>(24u, 16u, 8u, 0u)) >> vec4<u32>(28u);
  return mv_run(fma(h, vec4<f32>(qh), fma(l, vec4<f32>(ql), r.s)), hi);
}

fn gemm_dot2(pa: u32, pb0: u32, pb1: u32, n: u32) -> vec2<f32> {
  var x = vec4<f32>(0.0);
  var y = vec4<f32>(0.0);
  let c = 4u * P.cs_a;
  var a = pa;
  var inf0 = false;
  var inf1 = false;
  for (var blk = 0u; blk < n / 32u; blk++) {
    let y0 = P.off[1] + (pb0 / 32u + blk) * 18u;
    let y1 = P.off[1] + (pb1 / 32u + blk) * 18u;
    let w0 = y0 >> 2u;
    let w1 = y1 >> 2u;
    var r0 = mv_run(vec4<f32>(0.0), b_w(w0));
    var r1 = mv_run(vec4<f32>(0.0), b_w(w1));
    let d0 = mv_d(r0.lo, y0);
    let d1 = mv_d(r1.lo, y1);
    // four steps written out: a loop's every turn costs SwiftShader more
    // than its body
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
    a += 8u * c;
    x = fma(vec4<f32>(d0), r0.s, x);
    y = fma(vec4<f32>(d1), r1.s, y);
    inf0 = inf0 || mv_inf(d0);
    inf1 = inf1 || mv_inf(d1);
  }
  return vec2<f32>(mv_exact(inf0, pa, pb0, n, (x.x + x.y) + (x.z + x.w)),
                   mv_exact(inf1, pa, pb1, n, (y.x + y.y) + (y.z + y.w)));
}
