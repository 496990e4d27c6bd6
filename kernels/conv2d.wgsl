// 2-D cross-correlation, NCHW (host: src/webgpu/conv2d.c). Operands:
// x input [n, c, h, w], f filter [k, cg, r, s], b bias [k], y output
// [n, k, p, q]. A launch computes one piece of the output: a range of
// images, of groups (and of output channels within each group), of output
// rows and of output columns, summing over a range of the flattened taps kk
// = (ci, rr, ss) of cg*r*s. Each operand starts at the piece's first
// element: x at its first image, group, tap channel, and the first input row
// and column that the piece's receptive field needs (a window clipped to
// the image; coordinates are relative to it, so padding is still judged in
// global coordinates), f at its first channel and tap, b at its first
// channel, y at its first element. A piece that is not the first of its
// tap range adds to the output instead of writing it; only the last one
// adds the bias (has_bias).
// Prelude consts: MODE; ACC (true: add to the output, for a tap range after
// the first; a separate pipeline, as reading the output slows the writing
// form); for MODE 0 the tile BM x BN x BK.
//
// MODE 0: implicit GEMM per group g: out[m, pix] = sum over kk of
//   F[g*kg + m, kk] * X[kk, pix], pix = (img, row, col) over the piece. A
//   workgroup of 256 computes a BM (channels) x BN (pixels) tile, 4x4 per
//   invocation, staging BK-deep slices of F and of the gathered input
//   (im2col on the fly, zero padding) in workgroup memory.
// MODE 1: direct, for few channels per group (depthwise), where a GEMM
//   tile would be mostly empty: a workgroup takes `slots` output planes
//   (img, oc) side by side, each with 256/slots invocations computing 4
//   pixels apiece; no barriers (costly for so little arithmetic).

struct Params {
  off: vec4<u32>,
  kl: u32,      // output channels of the piece per image (groups * km)
  km: u32,      // output channels of the piece per group
  kgf: u32,     // channels per group of the whole conv (channel stride of g)
  ngroups: u32, // MODE 0: groups of the piece; MODE 1: planes (images * kl)
  kdim: u32,    // cg * r * s: filter row length
  kn: u32,      // taps of the piece
  klo: u32,     // first tap of the piece
  ci0: u32,     // its channel, klo / rs
  r: u32, s: u32,
  rs: u32,      // r * s
  has_bias: u32,
  hwin: u32,    // input window rows
  wwin: u32,    // input window columns
  xw: u32,      // input row stride (w)
  xhw: u32,     // input channel stride (h * w)
  ximg: u32,    // input image stride (c * h * w)
  xg: u32,      // input group stride (cg * h * w)
  ihb: i32,     // window row of output row 0, tap row 0 (pad and offset)
  iwb: i32,     // window column of output column 0, tap column 0
  sh: u32, sw: u32, dh: u32, dw: u32,
  qn: u32,      // output columns of the piece
  pqn: u32,     // output pixels of the piece per plane (rows * qn)
  npix: u32,    // images of the piece * pqn
  nci: u32,     // conv2d_blk.wgsl only (as nrr, nss after rr0)
  yq: u32,      // output row stride (q)
  ych: u32,     // output channel stride (p * q)
  yimg: u32,    // output image stride (k * p * q)
  slots: u32,   // MODE 1: planes per workgroup (power of two)
  tiles_n: u32, // MODE 0: pixel tiles; MODE 1: pixel tiles per plane
  tiles_m: u32, // MODE 0: channel tiles per group
  dss: u32,     // MODE 0: BK as (filter channel, row, column) steps:
  drr: u32,     //   BK % s, (BK / s) % r, (BK / rs) * h * w
  dcofs: u32,
  ss0: u32,     // MODE 1: klo % s
  rr0: u32,     // MODE 1: (klo / s) % r
  nrr: u32,
}

const TX: u32 = BN / 4u; // invocations along pixels
const TY: u32 = BM / 4u; // invocations along channels (TX * TY == 256)
const AS: u32 = BM + 1u; // padded row of the F slice
const CPT: u32 = 256u / BN; // loader invocations per pixel column
// Each invocation gathers BK / CPT == 4 rows of every input slice.

var<workgroup> As: array<f32, BK * AS>; // [kk][m]
var<workgroup> Bs: array<f32, BK * BN>; // [kk][pix]

fn conv_bias(oc: u32) -> f32 {
  if (P.has_bias != 0u) { return b_ld(oc); }
  return 0.0f;
}

// Offset of pixel pr of a plane of the piece in the output plane.
fn conv_ypix(pr: u32) -> u32 {
  if (P.qn == P.yq) { return pr; } // whole rows: contiguous
  return (pr / P.qn) * P.yq + pr % P.qn;
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

fn conv_store(m: u32, g: u32, n0: u32, tx: u32, v: vec4<f32>) {
  if (m >= P.km) { return; }
  let oc = g * P.kgf + m;
  let bias = conv_bias(oc);
  for (var j = 0u; j < 4u; j++) {
    let pix = n0 + tx + TX * j;
    if (pix < P.npix) {
      let img = pix / P.pqn;
      let pr = pix % P.pqn;
      conv_put(img * P.yimg + oc * P.ych + conv_ypix(pr), v[j], bias);
    }
  }
}

fn conv_gemm(gid: u32, li: u32) {
  let tn = gid % P.tiles_n;
  let rest = gid / P.tiles_n;
  let tm = rest % P.tiles_m;
  let g = rest / P.tiles_m;
  if (g >= P.ngroups) { return; } // surplus workgroups (uniform)
  let m0 = tm * BM;
  let n0 = tn * BN;
  let tx = li % TX;
  let ty = li / TX;

  // This invocation gathers input column bn of each slice.
  let bn = li % BN;
  let bk0 = li / BN;
  let pix = n0 + bn;
  let pvalid = pix < P.npix;
  var xbase = 0u;
  var ih0 = 0i;
  var iw0 = 0i;
  if (pvalid) {
    let img = pix / P.pqn;
    let pr = pix % P.pqn;
    ih0 = i32((pr / P.qn) * P.sh) + P.ihb;
    iw0 = i32((pr % P.qn) * P.sw) + P.iwb;
    xbase = img * P.ximg + g * P.xg;
  }
  let fbase = (g * P.kgf + m0) * P.kdim;
  let hi = i32(P.hwin);
  let wi = i32(P.wwin);
  let hw = P.xhw;
  // Rows kq = klo + k0 + bk0 + CPT * t (t < 4) as (filter column ss, row
  // rr, channel offset cofs = (ci - ci0) * h * w), advanced by BK per slice
  // without divisions.
  let kq0 = vec4<u32>(P.klo + bk0) + CPT * vec4<u32>(0u, 1u, 2u, 3u);
  var ss = vec4<u32>(0u);
  var rr = vec4<u32>(0u);
  var cofs = vec4<u32>(0u);
  if (P.kn > 0u) {
    ss = (kq0 % vec4<u32>(P.rs)) % vec4<u32>(P.s);
    rr = (kq0 % vec4<u32>(P.rs)) / vec4<u32>(P.s);
    cofs = (kq0 / vec4<u32>(P.rs) - vec4<u32>(P.ci0)) * hw;
  }

  var acc0 = vec4<f32>(0.0f);
  var acc1 = vec4<f32>(0.0f);
  var acc2 = vec4<f32>(0.0f);
  var acc3 = vec4<f32>(0.0f);
  for (var k0 = 0u; k0 < P.kn; k0 += BK) {
    for (var t = 0u; t < (BM * BK + 255u) / 256u; t++) {
      let e = li + 256u * t;
      if (e < BM * BK) {
        let m = e / BK;
        let kk = e % BK;
        var v = 0.0f;
        if (m0 + m < P.km && k0 + kk < P.kn) {
          v = f_ld(fbase + m * P.kdim + k0 + kk);
        }
        As[kk * AS + m] = v;
      }
    }
    for (var t = 0u; t < 4u; t++) {
      let kk = bk0 + CPT * t;
      var v = 0.0f;
      if (pvalid && k0 + kk < P.kn) {
        let ih = ih0 + i32(rr[t] * P.dh);
        let iw = iw0 + i32(ss[t] * P.dw);
        if (ih >= 0 && ih < hi && iw >= 0 && iw < wi) {
          v = x_ld(xbase + cofs[t] + u32(ih) * P.xw + u32(iw));
        }
      }
      Bs[kk * BN + bn] = v;
    }
    ss += vec4<u32>(P.dss);
    let c1 = ss >= vec4<u32>(P.s);
    ss = select(ss, ss - vec4<u32>(P.s), c1);
    rr += vec4<u32>(P.drr) + select(vec4<u32>(0u), vec4<u32>(1u), c1);
    let c2 = rr >= vec4<u32>(P.r);
    rr = select(rr, rr - vec4<u32>(P.r), c2);
    cofs += vec4<u32>(P.dcofs) + select(vec4<u32>(0u), vec4<u32>(hw), c2);
    workgroupBarrier();
    for (var kk = 0u; kk < BK; kk++) {
      let b = vec4<f32>(Bs[kk * BN + tx], Bs[kk * BN + tx + TX],
                        Bs[kk * BN + tx + 2u * TX], Bs[kk * BN + tx + 3u * TX]);
      let ar = kk * AS + ty;
      acc0 += As[ar] * b;
      acc1 += As[ar + TY] * b;
      acc2 += As[ar + 2u * TY] * b;
      acc3 += As[ar + 3u * TY] * b;
    }
    workgroupBarrier();
  }
  conv_store(m0 + ty, g, n0, tx, acc0);
  conv_store(m0 + ty + TY, g, n0, tx, acc1);
  conv_store(m0 + ty + 2u * TY, g, n0, tx, acc2);
  conv_store(m0 + ty + 3u * TY, g, n0, tx, acc3);
}

fn conv_direct(gid: u32, li: u32) {
  let per = 256u / P.slots; // invocations per plane
  let tile = gid % P.tiles_n;
  let pb = gid / P.tiles_n;
  if (pb * P.slots >= P.ngroups) { return; } // surplus workgroups (uniform)
  let slot = li / per;
  let lt = li % per;
  let plane = pb * P.slots + slot;
  let valid = plane < P.ngroups;
  let img = plane / P.kl;
  let ol = plane % P.kl;
  let g = ol / P.km;
  let oc = g * P.kgf + ol % P.km;
  let xbase = img * P.ximg + g * P.xg;
  let fbase = oc * P.kdim;
  let hi = vec4<i32>(i32(P.hwin));
  let wi = vec4<i32>(i32(P.wwin));
  let zero = vec4<i32>(0);

  // Pixels tile*per*4 + lt + per*j of the plane, j < 4.
  let pr = vec4<u32>(tile * per * 4u + lt) + per * vec4<u32>(0u, 1u, 2u, 3u);
  let pok = (pr < vec4<u32>(P.pqn)) & vec4<bool>(valid);
  let ih0 = vec4<i32>((pr / vec4<u32>(P.qn)) * P.sh) + vec4<i32>(P.ihb);
  let iw0 = vec4<i32>((pr % vec4<u32>(P.qn)) * P.sw) + vec4<i32>(P.iwb);

  // Taps kk = (ci, rr, ss) in order from klo, decoded incrementally. The
  // filter value is the same for every invocation of the plane (a broadcast
  // load that serves 4 pixels); neighbouring invocations share input rows
  // through the cache.
  var acc = vec4<f32>(0.0f);
  var cofs = 0u;
  var rr = P.rr0;
  var ss = P.ss0;
  for (var kk = 0u; kk < P.kn; kk++) {
    var wv = 0.0f;
    if (valid) { wv = f_ld(fbase + kk); }
    let ih = ih0 + vec4<i32>(i32(rr * P.dh));
    let iw = iw0 + vec4<i32>(i32(ss * P.dw));
    let inb = pok & (ih >= zero) & (ih < hi) & (iw >= zero) & (iw < wi);
    let idx = vec4<u32>(xbase + cofs) + vec4<u32>(ih) * P.xw + vec4<u32>(iw);
    if (inb.x) { acc.x += wv * x_ld(idx.x); }
    if (inb.y) { acc.y += wv * x_ld(idx.y); }
    if (inb.z) { acc.z += wv * x_ld(idx.z); }
    if (inb.w) { acc.w += wv * x_ld(idx.w); }
    ss += 1u;
    if (ss == P.s) {
      ss = 0u;
      rr += 1u;
      if (rr == P.r) {
        rr = 0u;
        cofs += P.xhw;
      }
    }
  }
  if (valid) {
    let bias = conv_bias(oc);
    let obase = img * P.yimg + oc * P.ych;
    if (pok.x) { conv_put(obase + conv_ypix(pr.x), acc.x, bias); }
    if (pok.y) { conv_put(obase + conv_ypix(pr.y), acc.y, bias); }
    if (pok.z) { conv_put(obase + conv_ypix(pr.z), acc.z, bias); }
    if (pok.w) { conv_put(obase + conv_ypix(pr.w), acc.w, bias); }
  }
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let gid = wg_linear_group(wid, nwg);
  if (MODE == 0u) {
    conv_gemm(gid, li);
  } else {
    conv_direct(gid, li);
  }
}
