// 2-D cross-correlation, NCHW (host: src/webgpu_conv2d.c). Operands:
// x input [n, c, h, w], f filter [k, cg, r, s], b bias [k], y output
// [n, k, p, q]; a launch covers a range of images (x and y start there).
// Prelude consts: MODE, and for MODE 0 the tile BM x BN x BK.
//
// MODE 0: implicit GEMM per group g: out[m, pix] = sum over kk of
//   F[g*kg + m, kk] * X[kk, pix], kk = (ci, rr, ss) of cg*r*s, pix =
//   (img, pp, qq) over the launch's images. A workgroup of 256 computes a
//   BM (channels) x BN (pixels) tile, 4x4 per invocation, staging BK-deep
//   slices of F and of the gathered input (im2col on the fly, zero padding)
//   in workgroup memory.
// MODE 1: direct, for few channels per group (depthwise), where a GEMM
//   tile would be mostly empty: a workgroup takes `slots` output planes
//   (img, oc) side by side, each with 256/slots invocations computing 4
//   pixels apiece; no barriers (costly for so little arithmetic).

struct Params {
  off: vec4<u32>,
  c: u32, h: u32, w: u32, k: u32,
  r: u32, s: u32, p: u32, q: u32,
  sh: u32, sw: u32, ph: u32, pw: u32,
  dh: u32, dw: u32, cg: u32, kg: u32,
  kdim: u32,    // cg * r * s
  rs: u32,      // r * s
  pq: u32,      // p * q
  npix: u32,    // images in the launch * p * q
  tiles_n: u32, // MODE 0: pixel tiles; MODE 1: pixel tiles per plane
  tiles_m: u32, // MODE 0: channel tiles per group
  ngroups: u32, // MODE 0: groups; MODE 1: planes (images * k)
  has_bias: u32,
  px: u32,      // unused
  slots: u32,   // MODE 1: planes per workgroup (power of two)
  dss: u32,     // MODE 0: BK as (filter channel, row, column) steps:
  drr: u32,     //   BK % s, (BK / s) % r, (BK / rs) * h * w
  dcofs: u32,
  pad0: u32, pad1: u32, pad2: u32,
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

fn conv_store(m: u32, g: u32, n0: u32, tx: u32, v: vec4<f32>) {
  if (m >= P.kg) { return; }
  let oc = g * P.kg + m;
  let bias = conv_bias(oc);
  for (var j = 0u; j < 4u; j++) {
    let pix = n0 + tx + TX * j;
    if (pix < P.npix) {
      let img = pix / P.pq;
      let pr = pix % P.pq;
      y_st((img * P.k + oc) * P.pq + pr, v[j] + bias);
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
    let img = pix / P.pq;
    let pr = pix % P.pq;
    ih0 = i32((pr / P.q) * P.sh) - i32(P.ph);
    iw0 = i32((pr % P.q) * P.sw) - i32(P.pw);
    xbase = (img * P.c + g * P.cg) * P.h * P.w;
  }
  let fbase = (g * P.kg + m0) * P.kdim;
  let hi = i32(P.h);
  let wi = i32(P.w);
  let hw = P.h * P.w;
  // Rows kq = k0 + bk0 + CPT * t (t < 4) as (filter column ss, row rr,
  // channel offset cofs = ci * h * w), advanced by BK per slice without
  // divisions.
  let kq0 = vec4<u32>(bk0, bk0 + CPT, bk0 + 2u * CPT, bk0 + 3u * CPT);
  var ss = vec4<u32>(0u);
  var rr = vec4<u32>(0u);
  var cofs = vec4<u32>(0u);
  if (P.kdim > 0u) {
    ss = (kq0 % vec4<u32>(P.rs)) % vec4<u32>(P.s);
    rr = (kq0 % vec4<u32>(P.rs)) / vec4<u32>(P.s);
    cofs = (kq0 / vec4<u32>(P.rs)) * hw;
  }

  var acc0 = vec4<f32>(0.0f);
  var acc1 = vec4<f32>(0.0f);
  var acc2 = vec4<f32>(0.0f);
  var acc3 = vec4<f32>(0.0f);
  for (var k0 = 0u; k0 < P.kdim; k0 += BK) {
    for (var t = 0u; t < (BM * BK + 255u) / 256u; t++) {
      let e = li + 256u * t;
      if (e < BM * BK) {
        let m = e / BK;
        let kk = e % BK;
        var v = 0.0f;
        if (m0 + m < P.kg && k0 + kk < P.kdim) {
          v = f_ld(fbase + m * P.kdim + k0 + kk);
        }
        As[kk * AS + m] = v;
      }
    }
    for (var t = 0u; t < 4u; t++) {
      let kk = bk0 + CPT * t;
      var v = 0.0f;
      if (pvalid && k0 + kk < P.kdim) {
        let ih = ih0 + i32(rr[t] * P.dh);
        let iw = iw0 + i32(ss[t] * P.dw);
        if (ih >= 0 && ih < hi && iw >= 0 && iw < wi) {
          v = x_ld(xbase + cofs[t] + u32(ih) * P.w + u32(iw));
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
  let img = plane / P.k;
  let oc = plane % P.k;
  let g = oc / P.kg;
  let xbase = (img * P.c + g * P.cg) * P.h * P.w;
  let fbase = oc * P.kdim;
  let hi = vec4<i32>(i32(P.h));
  let wi = vec4<i32>(i32(P.w));
  let zero = vec4<i32>(0);

  // Pixels tile*per*4 + lt + per*j of the plane, j < 4.
  let pr = vec4<u32>(tile * per * 4u + lt) + per * vec4<u32>(0u, 1u, 2u, 3u);
  let pok = (pr < vec4<u32>(P.pq)) & vec4<bool>(valid);
  let ih0 = vec4<i32>((pr / vec4<u32>(P.q)) * P.sh) - vec4<i32>(i32(P.ph));
  let iw0 = vec4<i32>((pr % vec4<u32>(P.q)) * P.sw) - vec4<i32>(i32(P.pw));

  // Taps kk = (ci, rr, ss) in order, decoded incrementally. The filter
  // value is the same for every invocation of the plane (a broadcast load
  // that serves 4 pixels); neighbouring invocations share input rows
  // through the cache.
  var acc = vec4<f32>(0.0f);
  var cofs = 0u;
  var rr = 0u;
  var ss = 0u;
  for (var kk = 0u; kk < P.kdim; kk++) {
    var wv = 0.0f;
    if (valid) { wv = f_ld(fbase + kk); }
    let ih = ih0 + vec4<i32>(i32(rr * P.dh));
    let iw = iw0 + vec4<i32>(i32(ss * P.dw));
    let inb = pok & (ih >= zero) & (ih < hi) & (iw >= zero) & (iw < wi);
    let idx = vec4<u32>(xbase + cofs) + vec4<u32>(ih) * P.w + vec4<u32>(iw);
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
        cofs += P.h * P.w;
      }
    }
  }
  if (valid) {
    let bias = conv_bias(oc);
    let obase = plane * P.pq;
    if (pok.x) { y_st(obase + pr.x, acc.x + bias); }
    if (pok.y) { y_st(obase + pr.y, acc.y + bias); }
    if (pok.z) { y_st(obase + pr.z, acc.z + bias); }
    if (pok.w) { y_st(obase + pr.w, acc.w + bias); }
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
