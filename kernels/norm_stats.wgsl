// One statistics pass of softmax, log-softmax, LayerNorm or RMSNorm over the
// middle axis of [outer, len, inner] (host: src/webgpu/norm.c). Invocation
// (o, c, i) folds chunk c (ch rows, strided by in_sr) of column i of outer
// index o into one record of four floats at out[o*out_so + c*out_sc + i].
// Long axes take several passes: later passes fold chunks of records.
// Rows (inner 1) on GPUs take interleaved chunks (step): chunk c holds rows
// c, c + step, ..., so that neighbouring invocations read neighbouring
// floats; the statistics do not depend on which rows a chunk holds.
// Prelude consts:
//   KIND 0 softmax, 1 log-softmax, 2 LayerNorm, 3 RMSNorm.
//   FROM_X 1: the input is the tensor; 0: records of a previous pass.
// Params: fin 1: the chunk ends the axis: the record takes its final form;
// acc 1: the chunk is merged into the record already at the output (rows
// of an axis whose stride is too wide for two rows in one binding, one
// launch each).
// Records (partial -> final):
//   softmax:   (max, sum of exp(x - max), its compensation, 0)
//              -> (max, sum) or, log-softmax, (max, log(sum))
//   LayerNorm: (pivot, mean - pivot, sum of squared deviations, count)
//              -> (pivot, mean - pivot, 1/sqrt(var + eps), 0)
//   RMSNorm:   (sum of squares, compensation, 0, 0) -> (1/sqrt(ms + eps))
// A NaN max marks a softmax row that is NaN. LayerNorm takes the chunk's
// mean as the pivot and sums deviations from it (two passes over the
// chunk, compensated), never E[x^2] - E[x]^2; chunks merge by Chan's
// formula. A constant chunk pivots on its value exactly, so a constant row
// has deviations of exactly 0.

struct Params {
  off: vec4<u32>,
  n_o: u32,    // outer indices in this launch
  n_c: u32,    // chunks per column in this launch
  n_i: u32,    // columns in this launch
  rows: u32,   // rows of the axis this launch reads
  ch: u32,     // rows per chunk
  in_so: u32,  // input stride between outer indices (elements or records)
  in_sr: u32,  // input stride along the axis
  out_so: u32, // output stride between outer indices (records)
  out_sc: u32, // output stride between chunks (records)
  len: f32,    // the axis length (fin)
  eps: f32,
  zero: u32,   // 0, unknown to the compiler (wgc_opaque)
  fin: u32,
  acc: u32,
  step: u32,   // 1: chunk c is rows [c*ch, (c+1)*ch); else rows c + j*step
}

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

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let t = wg_linear_group(wid, nwg) * 256u + li;
  let per_o = P.n_c * P.n_i;
  if (t >= P.n_o * per_o) { return; }
  let o = t / per_o;
  let rest = t - o * per_o;
  let c = rest / P.n_i;
  let i = rest - c * P.n_i;
  var r0 = c * P.ch;
  var n = min(P.ch, P.rows - r0);
  ns_stride = P.in_sr;
  if (P.step > 1u) { // interleaved chunks: neighbours read neighbours
    r0 = c;
    n = (P.rows - c + P.step - 1u) / P.step;
    ns_stride = P.in_sr * P.step;
  }
  var r = ns_chunk(o * P.in_so + r0 * P.in_sr + i, n);
  let at = 4u * (o * P.out_so + c * P.out_sc + i);
  if (P.acc == 1u) {
    r = ns_merge(vec4<f32>(y_ld(at), y_ld(at + 1u), y_ld(at + 2u),
                           y_ld(at + 3u)), r);
  }
  if (P.fin == 1u) { r = ns_final(r); }
  y_st(at, r.x);
  y_st(at + 1u, r.y);
  y_st(at + 2u, r.z);
  y_st(at + 3u, r.w);
}
