// One pass of a reduction over the middle axis of [outer, len, inner]
// (host: src/webgpu/reduce.c). Long axes take several passes: each pass
// reduces chunks of the axis into partials, the next pass reduces those.
// Self-contained: NaN and infinity come from bit patterns made at run time
// (Tint rejects a constant bitcast that yields inf or NaN).
// Prelude consts:
//   MODE 0: rows (inner == 1). A team of tpr invocations (a power of two)
//           owns one chunk of tpr*items contiguous elements of a row: each
//           member accumulates items elements strided by tpr (coalesced),
//           then the team combines in a workgroup-memory tree.
//           out[row*out_so + chunk*out_sc].
//   MODE 1: columns (inner > 1). One invocation per (o, chunk, i) combines
//           up to items rows of the chunk, reading coalesced over i.
//           out[o*out_so + chunk*out_sc + i].
//   MODE 2: as MODE 1, and with acc == 1 the output's current value (a
//           pair when OUT2) is folded in first: launches over blocks of
//           rows accumulate there (inner too wide for one binding).
//   MODE 3: rows (inner == 1) on CPU adapters, where workgroup memory is
//           ordinary memory and barriers are costly: no workgroup memory,
//           no barriers. One invocation per (row, chunk) combines the
//           chunk's items contiguous elements in registers. out as MODE 0.
//   OP 0: sum, 1: max, 2: min (MAX/MIN: any NaN gives NaN), 3: product,
//   4: log-sum-exp, 5: argmax, 6: argmin.
//   MAP (on elements of the tensor itself, IN2 == 0): 0 none, 1 x * x
//   (with its rounding error as the compensation), 2 |x|.
//   SQRT 1: the final result is the square root of the sum (L2).
//   IN2 / OUT2: the input / output holds pairs (element e at 2e, 2e+1):
//   the partials between passes. Sums and products: (value, compensation);
//   log-sum-exp: (m, s) standing for m + log(s); arg: (value, index bits).
//   Strides and counts are in elements (pairs).
// The result of the final pass is divided by div (len for MEAN, else 1).
// ibase: the axis index of the launch's first element (arg reductions).

struct Params {
  off: vec4<u32>,
  n_o: u32,    // rows (MODE 0) or outer indices (MODE 1) in this launch
  n_c: u32,    // chunks per row in this launch
  n_i: u32,    // MODE 1: inner indices in this launch
  rlen: u32,   // elements of the axis this launch reads, per row
  in_so: u32,  // input stride between rows / outer indices
  in_sr: u32,  // MODE 1: input stride along the axis (inner)
  out_so: u32, // output stride between rows / outer indices
  out_sc: u32, // output stride between chunks
  tpr: u32,    // MODE 0: invocations per row team (power of two, <= 256)
  items: u32,  // MODE 0: elements per invocation; MODE 1: rows per chunk
  div: f32,
  zero: u32,   // 0; see red_opaque
  acc: u32,    // MODE 2: 1 folds the output's current value in
  ibase: u32,  // axis index of the launch's first element
}

// Bit-pattern tests (compilers may fold x != x) and special values.
fn red_bits(b: u32) -> f32 { return bitcast<f32>(b ^ P.zero); }
fn red_is_nan(x: f32) -> bool {
  return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u;
}
fn red_is_finite(x: f32) -> bool {
  return (bitcast<u32>(x) & 0x7f800000u) != 0x7f800000u;
}

// The identity as a pair. Arg pairs carry index 0xffffffff, which every
// element beats on a tie.
fn red_identity() -> vec2<f32> {
  let none = bitcast<f32>(0xffffffffu ^ P.zero);
  if (OP == 1u || OP == 4u) { return vec2<f32>(red_bits(0xff800000u), 0.0f); }
  if (OP == 2u) { return vec2<f32>(red_bits(0x7f800000u), 0.0f); }
  if (OP == 3u) { return vec2<f32>(1.0f, 0.0f); }
  if (OP == 5u) { return vec2<f32>(red_bits(0xff800000u), none); }
  if (OP == 6u) { return vec2<f32>(red_bits(0x7f800000u), none); }
  return vec2<f32>(0.0f, 0.0f);
}

// Sums carry a compensation term (x: sum, y: rounding error so far, both
// f32): Fast2Sum on the larger and the smaller addend captures each
// addition's rounding error exactly, so the result is as good as a double
// accumulation whatever the order or structure of the data. Shader
// compilers apply inexact algebra (Mesa folds (a + b) - a to b), so the
// intermediate results pass through red_opaque, an xor with P.zero (0 at
// run time, unknown at compile time). Once the sum is infinite or NaN the
// term is meaningless and is ignored at the end.
fn red_opaque(x: f32) -> f32 {
  return bitcast<f32>(bitcast<u32>(x) ^ P.zero);
}

fn two_sum(a: f32, b: f32) -> vec2<f32> {
  let s = red_opaque(a + b);
  let a_big = abs(a) >= abs(b);
  let big = select(b, a, a_big);
  let small = select(a, b, a_big);
  return vec2<f32>(s, red_opaque(big - s) + small);
}

fn red_add(acc: vec2<f32>, x: f32) -> vec2<f32> {
  if (OP == 0u) {
    let t = two_sum(acc.x, x);
    return vec2<f32>(t.x, acc.y + t.y);
  }
  // Branch-free (divergent branches are costly on CPU adapters).
  let has_nan = red_is_nan(acc.x) | red_is_nan(x);
  var m = min(acc.x, x);
  if (OP == 1u) { m = max(acc.x, x); }
  return vec2<f32>(select(m, red_bits(0x7fc00000u), has_nan), 0.0f);
}

// a * b as (p, e) with p + e exact (Dekker's product on Veltkamp halves of
// 12 bits, whose products are exact): fma is not fused on every adapter.
// An error term beyond float range (halves of |x| > 2^115) counts as 0.
fn red_halves(a: f32) -> vec2<f32> {
  let c = red_opaque(4097.0f * a);
  let hi = red_opaque(c - red_opaque(c - a));
  return vec2<f32>(hi, a - hi);
}

fn two_prod(a: f32, b: f32) -> vec2<f32> {
  let p = red_opaque(a * b);
  let ha = red_halves(a);
  let hb = red_halves(b);
  let e = ((red_opaque(ha.x * hb.x) - p) + ha.x * hb.y + ha.y * hb.x) +
          ha.y * hb.y;
  return vec2<f32>(p, select(0.0f, e, red_is_finite(e)));
}

// (p, e) * (q, f) ~ p*q + (p*q's rounding error + p*f + e*q): the error of
// each product is kept as the sums keep theirs.
fn red_mul(a: vec2<f32>, b: vec2<f32>) -> vec2<f32> {
  let t = two_prod(a.x, b.x);
  return vec2<f32>(t.x, t.y + (a.x * b.y + a.y * b.x));
}

// (m, s) pairs stand for m + log(s): the larger m is kept and the other
// sum rescaled. A -inf m adds nothing, a +inf m is the result, NaN sticks.
fn red_lse(a: vec2<f32>, b: vec2<f32>) -> vec2<f32> {
  let a_hi = a.x >= b.x;
  let hi = select(b, a, a_hi);
  let lo = select(a, b, a_hi);
  var s = hi.y + lo.y * exp(lo.x - hi.x);
  s = select(s, hi.y, bitcast<u32>(lo.x) == 0xff800000u);
  s = select(s, 1.0f, bitcast<u32>(hi.x) == 0x7f800000u);
  let nan = red_is_nan(a.x) | red_is_nan(b.x);
  return select(vec2<f32>(hi.x, s), vec2<f32>(red_bits(0x7fc00000u), 1.0f),
                nan);
}

// The earlier of two (value, index) pairs unless the other is better: a
// NaN beats every number, a larger (smaller) value beats a smaller one,
// equal values go to the lower index. Independent of merge order.
fn red_arg(a: vec2<f32>, b: vec2<f32>) -> vec2<f32> {
  let ia = bitcast<u32>(a.y);
  let ib = bitcast<u32>(b.y);
  let na = red_is_nan(a.x);
  let nb = red_is_nan(b.x);
  var better = b.x > a.x;
  if (OP == 6u) { better = b.x < a.x; }
  let first = ib < ia;
  let tie = (b.x == a.x) & first;
  let take = (nb & (!na | first)) | (!na & !nb & (better | tie));
  return select(a, b, take);
}

fn red_merge(a: vec2<f32>, b: vec2<f32>) -> vec2<f32> {
  if (OP == 3u) { return red_mul(a, b); }
  if (OP == 4u) { return red_lse(a, b); }
  if (OP >= 5u) { return red_arg(a, b); }
  let t = red_add(a, b.x);
  return vec2<f32>(t.x, t.y + b.y);
}

// Element e of the input, at axis index k: a pair when IN2 == 1 (the
// partials of a previous pass), else the tensor's element as a pair.
fn red_ld(e: u32, k: u32) -> vec2<f32> {
  if (IN2 == 1u) { return vec2<f32>(x_ld(2u * e), x_ld(2u * e + 1u)); }
  return red_pair(x_ld(e), k);
}

// A tensor element v at axis index k as a pair.
fn red_pair(v: f32, k: u32) -> vec2<f32> {
  if (OP >= 5u) { return vec2<f32>(v, bitcast<f32>(k ^ P.zero)); }
  if (OP == 4u) { return vec2<f32>(v, 1.0f); }
  if (MAP == 1u) { return two_prod(v, v); }
  if (MAP == 2u) { return vec2<f32>(abs(v), 0.0f); }
  return vec2<f32>(v, 0.0f);
}

fn red_st(e: u32, a: vec2<f32>) {
  if (OUT2 == 1u) {
    y_st(2u * e, a.x);
    y_st(2u * e + 1u, a.y);
    return;
  }
  if (OP >= 5u) {
    y_st(e, a.y); // the index, as int32 bits
    return;
  }
  var v = a.x;
  if (OP == 4u) {
    if (red_is_finite(v)) { v = a.x + log(a.y); }
    y_st(e, v);
    return;
  }
  if (red_is_finite(v)) { v = a.x + a.y; }
  v = v / P.div;
  if (SQRT == 1u) { v = sqrt(v); }
  y_st(e, v);
}

var<workgroup> red_sh: array<vec2<f32>, 256>;

fn red_rows(gid: u32, li: u32) {
  let rpw = 256u / P.tpr; // rows per workgroup
  let chunk = gid % P.n_c;
  let rb = gid / P.n_c;
  if (rb * rpw >= P.n_o) { return; } // surplus workgroups (uniform)
  let lane = li % P.tpr;
  let row = rb * rpw + li / P.tpr;
  var acc = red_identity();
  if (row < P.n_o) {
    let base = row * P.in_so;
    let c0 = chunk * P.tpr * P.items;
    for (var j = 0u; j < P.items; j++) {
      let e = c0 + j * P.tpr + lane;
      if (e < P.rlen) {
        acc = red_merge(acc, red_ld(base + e, P.ibase + e));
      }
    }
  }
  red_sh[li] = acc;
  workgroupBarrier();
  for (var s = 128u; s > 0u; s = s >> 1u) {
    if (s < P.tpr && lane < s) {
      red_sh[li] = red_merge(red_sh[li], red_sh[li + s]);
    }
    workgroupBarrier();
  }
  if (lane == 0u && row < P.n_o) {
    red_st(row * P.out_so + chunk * P.out_sc, red_sh[li]);
  }
}

// MODE 3. Invocation t owns chunk t % n_c of row t / n_c.
fn red_rows_flat(gid: u32, li: u32) {
  let t = gid * 256u + li;
  if (t >= P.n_o * P.n_c) { return; }
  // Integer division is slow on CPU adapters: none for rows of one chunk.
  var row = t;
  var chunk = 0u;
  if (P.n_c > 1u) {
    row = t / P.n_c;
    chunk = t - row * P.n_c;
  }
  let e0 = chunk * P.items;
  let n = min(P.items, P.rlen - e0);
  var idx = row * P.in_so + e0;
  var acc = red_identity();
  var j = 0u;
  if (VEC) { // idx is a multiple of 4 (host: in_so, items)
    let k = P.ibase + e0;
    for (; j + 4u <= n; j += 4u) {
      let v = x_ld4(idx >> 2u);
      acc = red_merge(acc, red_pair(v.x, k + j));
      acc = red_merge(acc, red_pair(v.y, k + j + 1u));
      acc = red_merge(acc, red_pair(v.z, k + j + 2u));
      acc = red_merge(acc, red_pair(v.w, k + j + 3u));
      idx += 4u;
    }
  }
  for (; j < n; j++) {
    acc = red_merge(acc, red_ld(idx, P.ibase + e0 + j));
    idx += 1u;
  }
  red_st(row * P.out_so + chunk * P.out_sc, acc);
}

// MODE 1 with VEC: invocation t owns columns 4q..4q+3 of one chunk, read
// as one vec4 per row (host: n_i, in_sr and in_so multiples of 4), each
// column merged in the order red_cols merges it.
fn red_cols4(gid: u32, li: u32) {
  let t = gid * 256u + li;
  let n_q = P.n_i / 4u;
  let per_o = P.n_c * n_q;
  if (t >= P.n_o * per_o) { return; }
  let o = t / per_o;
  let rest = t - o * per_o;
  let c = rest / n_q;
  let i = (rest - c * n_q) * 4u;
  let r0 = c * P.items;
  let nr = min(P.items, P.rlen - r0);
  let at = o * P.out_so + c * P.out_sc + i;
  var a0 = red_identity();
  var a1 = a0;
  var a2 = a0;
  var a3 = a0;
  var idx = (o * P.in_so + r0 * P.in_sr + i) >> 2u;
  let step = P.in_sr >> 2u;
  for (var j = 0u; j < nr; j++) {
    let v = x_ld4(idx);
    let k = P.ibase + r0 + j;
    a0 = red_merge(a0, red_pair(v.x, k));
    a1 = red_merge(a1, red_pair(v.y, k));
    a2 = red_merge(a2, red_pair(v.z, k));
    a3 = red_merge(a3, red_pair(v.w, k));
    idx += step;
  }
  red_st(at, a0);
  red_st(at + 1u, a1);
  red_st(at + 2u, a2);
  red_st(at + 3u, a3);
}

fn red_cols(gid: u32, li: u32) {
  let t = gid * 256u + li;
  let per_o = P.n_c * P.n_i;
  if (t >= P.n_o * per_o) { return; }
  let o = t / per_o;
  let rest = t % per_o;
  let c = rest / P.n_i;
  let i = rest % P.n_i;
  let r0 = c * P.items;
  let nr = min(P.items, P.rlen - r0);
  let at = o * P.out_so + c * P.out_sc + i;
  var acc = red_identity();
  if (MODE == 2u && P.acc == 1u) {
    if (OUT2 == 1u) {
      acc = vec2<f32>(y_ld(2u * at), y_ld(2u * at + 1u));
    } else {
      acc = vec2<f32>(y_ld(at), 0.0f);
    }
  }
  var idx = o * P.in_so + r0 * P.in_sr + i;
  for (var j = 0u; j < nr; j++) {
    acc = red_merge(acc, red_ld(idx, P.ibase + r0 + j));
    idx += P.in_sr;
  }
  red_st(at, acc);
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let gid = wg_linear_group(wid, nwg);
  if (MODE == 0u) {
    red_rows(gid, li);
  } else if (MODE == 3u) {
    red_rows_flat(gid, li);
  } else if (MODE == 1u && VEC) {
    red_cols4(gid, li);
  } else {
    red_cols(gid, li);
  }
}
