// The statistics of softmax, log-softmax, LayerNorm and RMSNorm over a
// run of a row (records as kernels/norm_stats.wgsl describes them), for
// norm_stats.wgsl and norm_row.wgsl. Needs KIND and FROM_X (consts), x_ld,
// and P.zero, P.len and P.eps in the kernel's Params.

// The input stride between consecutive items of a chunk.
var<private> ns_stride: u32;

fn ns_ld(e: u32) -> vec4<f32> {
  if (FROM_X == 1u) { return vec4<f32>(x_ld(e), 0.0f, 0.0f, 0.0f); }
  return vec4<f32>(x_ld(4u * e), x_ld(4u * e + 1u), x_ld(4u * e + 2u),
                   x_ld(4u * e + 3u));
}

// (hi, lo) += v, the rounding error of each addition kept in lo.
fn ns_acc(a: vec2<f32>, v: f32) -> vec2<f32> {
  let t = wgc_two_sum(a.x, v, P.zero);
  return vec2<f32>(t.x, a.y + t.y);
}

// (hi, lo) += (b.x, b.y), another such pair. An infinite b.x has a NaN
// compensation, which must not reach the sum.
fn ns_acc_pair(a: vec2<f32>, b: vec2<f32>) -> vec2<f32> {
  let s = ns_acc(a, b.x);
  if (wgc_is_nan(b.x) || wgc_is_inf(b.x)) { return s; }
  return ns_acc(s, b.y);
}

fn ns_total(a: vec2<f32>) -> f32 {
  if (wgc_is_nan(a.x) || wgc_is_inf(a.x)) { return a.x; }
  return a.x + a.y;
}

// max that keeps the first NaN (WGSL leaves max(NaN, x) open).
fn ns_max(m: f32, v: f32) -> f32 {
  if (wgc_is_nan(m)) { return m; }
  if (wgc_is_nan(v)) { return v; }
  return max(m, v);
}

fn ns_neg_inf(v: f32) -> bool { return bitcast<u32>(v) == 0xff800000u; }

// softmax: (max, sum) of n items from idx.
fn ns_softmax(idx0: u32, n: u32) -> vec4<f32> {
  var m = -wgc_inf();
  var idx = idx0;
  for (var j = 0u; j < n; j++) {
    m = ns_max(m, ns_ld(idx).x);
    idx += ns_stride;
  }
  var s = vec2<f32>(0.0f, 0.0f);
  idx = idx0;
  for (var j = 0u; j < n; j++) {
    let r = ns_ld(idx);
    idx += ns_stride;
    // -inf items (and records of all -inf chunks) add nothing; +inf - +inf
    // is NaN, as the formula has it
    if (ns_neg_inf(r.x)) { continue; }
    let w = wgc_exp(r.x - m);
    if (FROM_X == 1u) {
      s = ns_acc(s, w);
    } else {
      s = ns_acc(s, r.y * w);
      s = ns_acc(s, r.z * w);
    }
  }
  return vec4<f32>(m, s.x, s.y, 0.0f);
}

// LayerNorm from the tensor: two passes over the chunk.
fn ns_layer_x(idx0: u32, n: u32) -> vec4<f32> {
  var sum = 0.0f;
  let first = x_ld(idx0);
  var same = true;
  var idx = idx0;
  for (var j = 0u; j < n; j++) {
    let v = x_ld(idx);
    sum += v;
    same = same && bitcast<u32>(v) == bitcast<u32>(first);
    idx += ns_stride;
  }
  let cnt = f32(n);
  var pivot = sum / cnt;
  if (same) { pivot = first; }
  var s1 = vec2<f32>(0.0f, 0.0f);
  var s2 = vec2<f32>(0.0f, 0.0f);
  idx = idx0;
  for (var j = 0u; j < n; j++) {
    let d = x_ld(idx) - pivot;
    s1 = ns_acc(s1, d);
    s2 = ns_acc(s2, d * d);
    idx += ns_stride;
  }
  let t1 = ns_total(s1);
  let m = t1 / cnt;
  return vec4<f32>(pivot, m, ns_total(s2) - t1 * m, cnt);
}

// Chan's merge of LayerNorm records a and b; the pivot stays a's.
fn ns_layer_merge(a: vec4<f32>, b: vec4<f32>) -> vec4<f32> {
  let n = a.w + b.w;
  let delta = (b.x - a.x) + (b.y - a.y); // mean_b - mean_a
  let fb = b.w / n;
  return vec4<f32>(a.x, a.y + delta * fb, a.z + b.z + delta * delta * a.w * fb,
                   n);
}

// Merges two partial records of one row.
fn ns_merge(a: vec4<f32>, b: vec4<f32>) -> vec4<f32> {
  if (KIND == 2u) { return ns_layer_merge(a, b); }
  if (KIND == 3u) { return vec4<f32>(ns_acc_pair(a.xy, b.xy), 0.0f, 0.0f); }
  let m = ns_max(a.x, b.x);
  var s = vec2<f32>(0.0f, 0.0f);
  if (!ns_neg_inf(a.x)) {
    let w = wgc_exp(a.x - m);
    s = ns_acc(ns_acc(s, a.y * w), a.z * w);
  }
  if (!ns_neg_inf(b.x)) {
    let w = wgc_exp(b.x - m);
    s = ns_acc(ns_acc(s, b.y * w), b.z * w);
  }
  return vec4<f32>(m, s.x, s.y, 0.0f);
}

fn ns_chunk(idx0: u32, n: u32) -> vec4<f32> {
  if (KIND <= 1u) { return ns_softmax(idx0, n); }
  if (KIND == 2u) {
    if (FROM_X == 1u) { return ns_layer_x(idx0, n); }
    var a = ns_ld(idx0);
    var idx = idx0;
    for (var j = 1u; j < n; j++) {
      idx += ns_stride;
      a = ns_layer_merge(a, ns_ld(idx));
    }
    return a;
  }
  var s = vec2<f32>(0.0f, 0.0f);
  var idx = idx0;
  for (var j = 0u; j < n; j++) {
    let r = ns_ld(idx);
    if (FROM_X == 1u) {
      s = ns_acc(s, r.x * r.x);
    } else {
      s = ns_acc_pair(s, r.xy);
    }
    idx += ns_stride;
  }
  return vec4<f32>(s.x, s.y, 0.0f, 0.0f);
}

fn ns_final(r: vec4<f32>) -> vec4<f32> {
  if (KIND == 0u) { return vec4<f32>(r.x, ns_total(r.yz), 0.0f, 0.0f); }
  if (KIND == 1u) {
    // SwiftShader's log(NaN) is not NaN
    let s = ns_total(r.yz);
    return vec4<f32>(r.x, select(log(s), s, wgc_is_nan(s)), 0.0f, 0.0f);
  }
  if (KIND == 2u) {
    // rounding may leave a tiny negative sum; NaN must stay NaN
    let m2 = select(r.z, 0.0f, r.z < 0.0f);
    return vec4<f32>(r.x, r.y, 1.0f / sqrt(m2 / P.len + P.eps), 0.0f);
  }
  return vec4<f32>(1.0f / sqrt(ns_total(r.xy) / P.len + P.eps), 0.0f, 0.0f,
                   0.0f);
}
