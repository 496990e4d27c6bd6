// conv2d's implicit GEMM for CPU adapters (host: src/webgpu/conv2d.c; the
// operands, pieces and Params are those of kernels/conv2d.wgsl, MODE 0).
// No workgroup memory and no barriers: on CPU adapters workgroup memory is
// ordinary memory and every barrier is costly (SwiftShader switches
// coroutines at each one). Each invocation computes 8 output channels x 4
// output pixels of one group in registers, reading filter and input
// straight from memory. Invocations of a workgroup take neighbouring pixel
// blocks of the same channels, so they share filter values and input rows
// through the cache. The piece's taps are a box: channels ci0 .. ci0+nci-1,
// filter rows rr0 .. rr0+nrr-1, columns ss0 .. ss0+nss-1 (whole channels,
// whole rows of one channel, or columns of one row), in filter order.
// Channels and pixels past the edge load clamped (valid) indices and are
// not stored. Prelude consts: ACC (as in conv2d.wgsl), WG (workgroup size).

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
  let m0 = (rest % P.tiles_m) * 8u;

  // Pixels n0 + j (j < 4) as image, output row and column; past the edge
  // clamped.
  let n0 = pb * 4u;
  let pix = min(vec4<u32>(n0) + vec4<u32>(0u, 1u, 2u, 3u),
                vec4<u32>(P.npix - 1u));
  let img = pix / vec4<u32>(P.pqn);
  let pr = pix % vec4<u32>(P.pqn);
  let ih0 = vec4<i32>((pr / vec4<u32>(P.qn)) * P.sh) + vec4<i32>(P.ihb);
  let iw0 = vec4<i32>((pr % vec4<u32>(P.qn)) * P.sw) + vec4<i32>(P.iwb);
  let xb = img * P.ximg + vec4<u32>(g * P.xg);
  let hi = vec4<i32>(i32(P.hwin));
  let wi = vec4<i32>(i32(P.wwin));
  let zero = vec4<i32>(0);

  // Filter rows of channels m0 + i (fr0: i < 4, fr1: 4 <= i < 8), clamped.
  let oc0 = g * P.kgf;
  let last = P.km - 1u;
  let mi = vec4<u32>(m0) + vec4<u32>(0u, 1u, 2u, 3u);
  let fr0 = (vec4<u32>(oc0) + min(mi, vec4<u32>(last))) * P.kdim;
  let fr1 =
      (vec4<u32>(oc0) + min(mi + vec4<u32>(4u), vec4<u32>(last))) * P.kdim;

  var acc0 = vec4<f32>(0.0f); // channel m0 + i: acc<i>, pixels n0 + j
  var acc1 = vec4<f32>(0.0f);
  var acc2 = vec4<f32>(0.0f);
  var acc3 = vec4<f32>(0.0f);
  var acc4 = vec4<f32>(0.0f);
  var acc5 = vec4<f32>(0.0f);
  var acc6 = vec4<f32>(0.0f);
  var acc7 = vec4<f32>(0.0f);
  // Filter rows and columns outside, channels inside: the pixels' input
  // offsets and padding masks are set once per filter position.
  var t = 0u; // tap of the piece at channel 0 of this position
  for (var rr = P.rr0; rr < P.rr0 + P.nrr; rr++) {
    let ih = ih0 + vec4<i32>(i32(rr * P.dh));
    let rowok = (ih >= zero) & (ih < hi);
    let rowb = xb + vec4<u32>(ih) * P.xw;
    for (var ss = P.ss0; ss < P.ss0 + P.nss; ss++) {
      let iw = iw0 + vec4<i32>(i32(ss * P.dw));
      let ok = rowok & (iw >= zero) & (iw < wi);
      // Masked pixels read offset 0 of each channel plane (inside the
      // window) and are zeroed.
      var xi = select(vec4<u32>(0u), rowb + vec4<u32>(iw), ok);
      var fi = fr0 + vec4<u32>(t);
      var fj = fr1 + vec4<u32>(t);
      for (var ci = 0u; ci < P.nci; ci++) {
        let xv = select(vec4<f32>(0.0f),
                        vec4<f32>(x_ld(xi.x), x_ld(xi.y), x_ld(xi.z),
                                  x_ld(xi.w)),
                        ok);
        acc0 = fma(vec4<f32>(f_ld(fi.x)), xv, acc0);
        acc1 = fma(vec4<f32>(f_ld(fi.y)), xv, acc1);
        acc2 = fma(vec4<f32>(f_ld(fi.z)), xv, acc2);
        acc3 = fma(vec4<f32>(f_ld(fi.w)), xv, acc3);
        acc4 = fma(vec4<f32>(f_ld(fj.x)), xv, acc4);
        acc5 = fma(vec4<f32>(f_ld(fj.y)), xv, acc5);
        acc6 = fma(vec4<f32>(f_ld(fj.z)), xv, acc6);
        acc7 = fma(vec4<f32>(f_ld(fj.w)), xv, acc7);
        xi += vec4<u32>(P.xhw);
        fi += vec4<u32>(P.rs);
        fj += vec4<u32>(P.rs);
      }
      t++;
    }
  }

  let acc = array<vec4<f32>, 8>(acc0, acc1, acc2, acc3, acc4, acc5, acc6,
                                acc7);
  for (var i = 0u; i < 8u; i++) {
    let m = m0 + i;
    if (m < P.km) {
      let oc = oc0 + m;
      var bias = 0.0f;
      if (P.has_bias != 0u) {
        bias = b_ld(oc);
      }
      for (var j = 0u; j < 4u; j++) {
        if (n0 + j < P.npix) {
          var yp = pr[j]; // offset in the output plane
          if (P.qn != P.yq) {
            yp = (yp / P.qn) * P.yq + yp % P.qn;
          }
          conv_put(img[j] * P.yimg + oc * P.ych + yp, acc[i][j], bias);
        }
      }
    }
  }
}
