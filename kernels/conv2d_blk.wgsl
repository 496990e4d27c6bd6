// conv2d's implicit GEMM for CPU adapters (host: src/webgpu/conv2d.c; the
// operands, pieces and Params are those of kernels/conv2d.wgsl, MODE 0).
// No workgroup memory and no barriers: on CPU adapters workgroup memory is
// ordinary memory and every barrier is costly (SwiftShader switches
// coroutines at each one). Each invocation computes a 16 x 8 block (output
// channels x output pixels) of one group in registers, reading filter and
// input straight from memory, like gemm_regs: per tap 24 loads feed 128
// multiply-adds (an 8 x 4 block: 12 per 32). Invocations of a workgroup
// take neighbouring pixel blocks of the same channels, so they share filter
// values and input rows through the cache. The piece's taps are a box:
// channels ci0 .. ci0+nci-1, filter rows rr0 .. rr0+nrr-1, columns
// ss0 .. ss0+nss-1 (whole channels, whole rows of one channel, or columns
// of one row), in filter order. Channels and pixels past the edge load
// clamped (valid) indices and are not stored. Each accumulator is its own
// variable, so that nothing is indexed at run time. Prelude consts: ACC (as
// in conv2d.wgsl), WG (workgroup size).

struct Params { // conv_params of src/webgpu/conv2d.c
  off: vec4<u32>,
  kl: u32, km: u32, kgf: u32, ngroups: u32,
  kdim: u32, kn: u32, klo: u32, ci0: u32,
  r: u32, s: u32, rs: u32, has_bias: u32,
  hwin: u32, wwin: u32, xw: u32, xhw: u32,
  ximg: u32, xg: u32, ihb: i32, iwb: i32,
  sh: u32, sw: u32, dh: u32, dw: u32,
  qn: u32, pqn: u32, npix: u32, nci: u32,
  yq: u32, ych: u32, yimg: u32, slots: u32,
  tiles_n: u32, tiles_m: u32, dss: u32, drr: u32,
  dcofs: u32, ss0: u32, rr0: u32, nrr: u32,
  nss: u32, pad0: u32, pad1: u32, pad2: u32,
}

// The bias comes last, onto the whole sum (has_bias is set only for the
// last tap range of a split sum).
fn conv_put(i: u32, v: f32, bias: f32) {
  var r = v;
  if (ACC) { // a const: the writing form never reads the output
    r = y_ld(i) + v;
  }
  if (P.has_bias != 0u) {
    r = r + bias;
  }
  y_st(i, r);
}

// Four outputs of channel m (of the piece's group g) at output offsets
// oc * ych + yo, those of pixels inside the piece (ok).
fn conv_put4(g: u32, m: u32, yo: vec4<u32>, ok: vec4<bool>, v: vec4<f32>) {
  if (m >= P.km) {
    return;
  }
  let oc = g * P.kgf + m;
  var bias = 0.0f;
  if (P.has_bias != 0u) {
    bias = b_ld(oc);
  }
  let base = oc * P.ych;
  if (ok.x) {
    conv_put(base + yo.x, v.x, bias);
  }
  if (ok.y) {
    conv_put(base + yo.y, v.y, bias);
  }
  if (ok.z) {
    conv_put(base + yo.z, v.z, bias);
  }
  if (ok.w) {
    conv_put(base + yo.w, v.w, bias);
  }
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  // Invocation -> (group, channel block, pixel block), pixels fastest.
  let inv = wg_linear_group(wid, nwg) * WG + li;
  let pb = inv % P.tiles_n;
  let rest = inv / P.tiles_n;
  let g = rest / P.tiles_m;
  if (g >= P.ngroups) {
    return; // no barrier follows: leaving early is fine
  }
  let m0 = (rest % P.tiles_m) * 16u;
  let n0 = pb * 8u;
  let hi = vec4<i32>(i32(P.hwin));
  let wi = vec4<i32>(i32(P.wwin));
  let zero = vec4<i32>(0);

  // Pixels n0 + j (j < 4): whether inside the piece, their output
  // offsets (less the channel's), input rows, columns and bases; past the
  // edge clamped.
  let pn0 = vec4<u32>(n0) + vec4<u32>(0u, 1u, 2u, 3u);
  let pin0 = pn0 < vec4<u32>(P.npix);
  let pix0 = min(pn0, vec4<u32>(P.npix - 1u));
  let pr0 = pix0 % vec4<u32>(P.pqn);
  let rows0 = pr0 / vec4<u32>(P.qn);
  let yo0 = (pix0 / vec4<u32>(P.pqn)) * P.yimg +
            select(rows0 * P.yq + pr0 % vec4<u32>(P.qn), pr0,
                   P.qn == P.yq);
  let ih0 = vec4<i32>(rows0 * P.sh) + vec4<i32>(P.ihb);
  let iw0 = vec4<i32>((pr0 % vec4<u32>(P.qn)) * P.sw) + vec4<i32>(P.iwb);
  let xb0 = (pix0 / vec4<u32>(P.pqn)) * P.ximg + vec4<u32>(g * P.xg);

  // Pixels n0 + 4 + j (j < 4): whether inside the piece, their output
  // offsets (less the channel's), input rows, columns and bases; past the
  // edge clamped.
  let pn1 = vec4<u32>(n0 + 4u) + vec4<u32>(0u, 1u, 2u, 3u);
  let pin1 = pn1 < vec4<u32>(P.npix);
  let pix1 = min(pn1, vec4<u32>(P.npix - 1u));
  let pr1 = pix1 % vec4<u32>(P.pqn);
  let rows1 = pr1 / vec4<u32>(P.qn);
  let yo1 = (pix1 / vec4<u32>(P.pqn)) * P.yimg +
            select(rows1 * P.yq + pr1 % vec4<u32>(P.qn), pr1,
                   P.qn == P.yq);
  let ih1 = vec4<i32>(rows1 * P.sh) + vec4<i32>(P.ihb);
  let iw1 = vec4<i32>((pr1 % vec4<u32>(P.qn)) * P.sw) + vec4<i32>(P.iwb);
  let xb1 = (pix1 / vec4<u32>(P.pqn)) * P.ximg + vec4<u32>(g * P.xg);

  // Filter rows of channels m0 + i, clamped.
  let last = g * P.kgf + P.km - 1u;
  let oc0 = g * P.kgf + m0;

  let fr0 = min(oc0 + 0u, last) * P.kdim;
  let fr1 = min(oc0 + 1u, last) * P.kdim;
  let fr2 = min(oc0 + 2u, last) * P.kdim;
  let fr3 = min(oc0 + 3u, last) * P.kdim;
  let fr4 = min(oc0 + 4u, last) * P.kdim;
  let fr5 = min(oc0 + 5u, last) * P.kdim;
  let fr6 = min(oc0 + 6u, last) * P.kdim;
  let fr7 = min(oc0 + 7u, last) * P.kdim;
  let fr8 = min(oc0 + 8u, last) * P.kdim;
  let fr9 = min(oc0 + 9u, last) * P.kdim;
  let fr10 = min(oc0 + 10u, last) * P.kdim;
  let fr11 = min(oc0 + 11u, last) * P.kdim;
  let fr12 = min(oc0 + 12u, last) * P.kdim;
  let fr13 = min(oc0 + 13u, last) * P.kdim;
  let fr14 = min(oc0 + 14u, last) * P.kdim;
  let fr15 = min(oc0 + 15u, last) * P.kdim;
  var acc0_0 = vec4<f32>(0.0f);
  var acc0_1 = vec4<f32>(0.0f);
  var acc1_0 = vec4<f32>(0.0f);
  var acc1_1 = vec4<f32>(0.0f);
  var acc2_0 = vec4<f32>(0.0f);
  var acc2_1 = vec4<f32>(0.0f);
  var acc3_0 = vec4<f32>(0.0f);
  var acc3_1 = vec4<f32>(0.0f);
  var acc4_0 = vec4<f32>(0.0f);
  var acc4_1 = vec4<f32>(0.0f);
  var acc5_0 = vec4<f32>(0.0f);
  var acc5_1 = vec4<f32>(0.0f);
  var acc6_0 = vec4<f32>(0.0f);
  var acc6_1 = vec4<f32>(0.0f);
  var acc7_0 = vec4<f32>(0.0f);
  var acc7_1 = vec4<f32>(0.0f);
  var acc8_0 = vec4<f32>(0.0f);
  var acc8_1 = vec4<f32>(0.0f);
  var acc9_0 = vec4<f32>(0.0f);
  var acc9_1 = vec4<f32>(0.0f);
  var acc10_0 = vec4<f32>(0.0f);
  var acc10_1 = vec4<f32>(0.0f);
  var acc11_0 = vec4<f32>(0.0f);
  var acc11_1 = vec4<f32>(0.0f);
  var acc12_0 = vec4<f32>(0.0f);
  var acc12_1 = vec4<f32>(0.0f);
  var acc13_0 = vec4<f32>(0.0f);
  var acc13_1 = vec4<f32>(0.0f);
  var acc14_0 = vec4<f32>(0.0f);
  var acc14_1 = vec4<f32>(0.0f);
  var acc15_0 = vec4<f32>(0.0f);
  var acc15_1 = vec4<f32>(0.0f);
  // Filter rows and columns outside, channels inside: the pixels' input
  // offsets and padding masks are set once per filter position.
  var t = 0u; // tap of the piece at channel 0 of this position
  for (var rr = P.rr0; rr < P.rr0 + P.nrr; rr++) {
    let dh = vec4<i32>(i32(rr * P.dh));
    let ihr0 = ih0 + dh;
    let rowok0 = (ihr0 >= zero) & (ihr0 < hi);
    let rowb0 = xb0 + vec4<u32>(ihr0) * P.xw;
    let ihr1 = ih1 + dh;
    let rowok1 = (ihr1 >= zero) & (ihr1 < hi);
    let rowb1 = xb1 + vec4<u32>(ihr1) * P.xw;
    for (var ss = P.ss0; ss < P.ss0 + P.nss; ss++) {
      let dw = vec4<i32>(i32(ss * P.dw));
      let iwr0 = iw0 + dw;
      let ok0 = rowok0 & (iwr0 >= zero) & (iwr0 < wi);
      // Masked pixels read offset 0 (inside the window) and are zeroed.
      var xi0 = select(vec4<u32>(0u), rowb0 + vec4<u32>(iwr0), ok0);
      let iwr1 = iw1 + dw;
      let ok1 = rowok1 & (iwr1 >= zero) & (iwr1 < wi);
      var xi1 = select(vec4<u32>(0u), rowb1 + vec4<u32>(iwr1), ok1);
      var ft = t;
      for (var ci = 0u; ci < P.nci; ci++) {
        let x0 = select(vec4<f32>(0.0f),
                        vec4<f32>(x_ld(xi0.x), x_ld(xi0.y), x_ld(xi0.z),
                                  x_ld(xi0.w)),
                        ok0);
        let x1 = select(vec4<f32>(0.0f),
                        vec4<f32>(x_ld(xi1.x), x_ld(xi1.y), x_ld(xi1.z),
                                  x_ld(xi1.w)),
                        ok1);
        let f0 = vec4<f32>(f_ld(fr0 + ft));
        acc0_0 = fma(f0, x0, acc0_0);
        acc0_1 = fma(f0, x1, acc0_1);
        let f1 = vec4<f32>(f_ld(fr1 + ft));
        acc1_0 = fma(f1, x0, acc1_0);
        acc1_1 = fma(f1, x1, acc1_1);
        let f2 = vec4<f32>(f_ld(fr2 + ft));
        acc2_0 = fma(f2, x0, acc2_0);
        acc2_1 = fma(f2, x1, acc2_1);
        let f3 = vec4<f32>(f_ld(fr3 + ft));
        acc3_0 = fma(f3, x0, acc3_0);
        acc3_1 = fma(f3, x1, acc3_1);
        let f4 = vec4<f32>(f_ld(fr4 + ft));
        acc4_0 = fma(f4, x0, acc4_0);
        acc4_1 = fma(f4, x1, acc4_1);
        let f5 = vec4<f32>(f_ld(fr5 + ft));
        acc5_0 = fma(f5, x0, acc5_0);
        acc5_1 = fma(f5, x1, acc5_1);
        let f6 = vec4<f32>(f_ld(fr6 + ft));
        acc6_0 = fma(f6, x0, acc6_0);
        acc6_1 = fma(f6, x1, acc6_1);
        let f7 = vec4<f32>(f_ld(fr7 + ft));
        acc7_0 = fma(f7, x0, acc7_0);
        acc7_1 = fma(f7, x1, acc7_1);
        let f8 = vec4<f32>(f_ld(fr8 + ft));
        acc8_0 = fma(f8, x0, acc8_0);
        acc8_1 = fma(f8, x1, acc8_1);
        let f9 = vec4<f32>(f_ld(fr9 + ft));
        acc9_0 = fma(f9, x0, acc9_0);
        acc9_1 = fma(f9, x1, acc9_1);
        let f10 = vec4<f32>(f_ld(fr10 + ft));
        acc10_0 = fma(f10, x0, acc10_0);
        acc10_1 = fma(f10, x1, acc10_1);
        let f11 = vec4<f32>(f_ld(fr11 + ft));
        acc11_0 = fma(f11, x0, acc11_0);
        acc11_1 = fma(f11, x1, acc11_1);
        let f12 = vec4<f32>(f_ld(fr12 + ft));
        acc12_0 = fma(f12, x0, acc12_0);
        acc12_1 = fma(f12, x1, acc12_1);
        let f13 = vec4<f32>(f_ld(fr13 + ft));
        acc13_0 = fma(f13, x0, acc13_0);
        acc13_1 = fma(f13, x1, acc13_1);
        let f14 = vec4<f32>(f_ld(fr14 + ft));
        acc14_0 = fma(f14, x0, acc14_0);
        acc14_1 = fma(f14, x1, acc14_1);
        let f15 = vec4<f32>(f_ld(fr15 + ft));
        acc15_0 = fma(f15, x0, acc15_0);
        acc15_1 = fma(f15, x1, acc15_1);
        xi0 += vec4<u32>(P.xhw);
        xi1 += vec4<u32>(P.xhw);
        ft += P.rs;
      }
      t++;
    }
  }

  conv_put4(g, m0 + 0u, yo0, pin0, acc0_0);
  conv_put4(g, m0 + 0u, yo1, pin1, acc0_1);
  conv_put4(g, m0 + 1u, yo0, pin0, acc1_0);
  conv_put4(g, m0 + 1u, yo1, pin1, acc1_1);
  conv_put4(g, m0 + 2u, yo0, pin0, acc2_0);
  conv_put4(g, m0 + 2u, yo1, pin1, acc2_1);
  conv_put4(g, m0 + 3u, yo0, pin0, acc3_0);
  conv_put4(g, m0 + 3u, yo1, pin1, acc3_1);
  conv_put4(g, m0 + 4u, yo0, pin0, acc4_0);
  conv_put4(g, m0 + 4u, yo1, pin1, acc4_1);
  conv_put4(g, m0 + 5u, yo0, pin0, acc5_0);
  conv_put4(g, m0 + 5u, yo1, pin1, acc5_1);
  conv_put4(g, m0 + 6u, yo0, pin0, acc6_0);
  conv_put4(g, m0 + 6u, yo1, pin1, acc6_1);
  conv_put4(g, m0 + 7u, yo0, pin0, acc7_0);
  conv_put4(g, m0 + 7u, yo1, pin1, acc7_1);
  conv_put4(g, m0 + 8u, yo0, pin0, acc8_0);
  conv_put4(g, m0 + 8u, yo1, pin1, acc8_1);
  conv_put4(g, m0 + 9u, yo0, pin0, acc9_0);
  conv_put4(g, m0 + 9u, yo1, pin1, acc9_1);
  conv_put4(g, m0 + 10u, yo0, pin0, acc10_0);
  conv_put4(g, m0 + 10u, yo1, pin1, acc10_1);
  conv_put4(g, m0 + 11u, yo0, pin0, acc11_0);
  conv_put4(g, m0 + 11u, yo1, pin1, acc11_1);
  conv_put4(g, m0 + 12u, yo0, pin0, acc12_0);
  conv_put4(g, m0 + 12u, yo1, pin1, acc12_1);
  conv_put4(g, m0 + 13u, yo0, pin0, acc13_0);
  conv_put4(g, m0 + 13u, yo1, pin1, acc13_1);
  conv_put4(g, m0 + 14u, yo0, pin0, acc14_0);
  conv_put4(g, m0 + 14u, yo1, pin1, acc14_1);
  conv_put4(g, m0 + 15u, yo0, pin0, acc15_0);
  conv_put4(g, m0 + 15u, yo1, pin1, acc15_1);
}
