// Shared by the attention kernels (attention.wgsl: staged through
// workgroup memory; attention_block.wgsl: without barriers, for CPU
// adapters), each concatenated after this file and after attention_mask.wgsl
// or attention_nomask.wgsl (attn_masked: the additive mask or nothing): the
// Params both take from src/webgpu/attention.c, strided row addressing,
// softcap, the causal masks, and row loads and stores that stop at a
// head size. A score is attn_masked(attn_cap(scale * q.k), at), as the
// formula has it, never from a Q pre-scaled by scale: that can turn a
// normal element subnormal, which adapters may flush to 0 (SwiftShader
// does), and 0 times an infinite K element is NaN where the score is -inf.

struct Params {
  off: vec4<u32>,
  off2: vec4<u32>,  // operand 4: the mask (attention_mask.wgsl)
  heads: u32,
  heads_kv: u32,
  group: u32,     // heads / heads_kv
  seq_q: u32,
  seq_kv: u32,
  head_dim: u32,  // of Q and K
  head_dim_v: u32,  // of V and O
  qblocks: u32,   // query blocks per head (of BQ or WG rows)
  dgroups: u32,   // dim groups per head (tiles shape; else 1)
  bh_base: u32,   // batch*heads + head of this launch's first Q head
  bh_count: u32,  // Q heads in this launch
  causal: u32,    // a wgc_causal
  scale: f32,
  softcap: f32,   // > 0 when SOFTCAP == 1
  q_first: u32,   // global index of this launch's query row 0
  k_first: u32,   // global index of this launch's key 0
  gq: u32,        // the call's seq_q and seq_kv (masks)
  gkv: u32,
  o_stride: u32,  // partial: elements between state rows (5*head_dim_v + 2)
  kb_keys: u32,   // attention_block: keys per key block of an invocation (0: all)
  // Element strides over (batch, head, seq) and, in w, the element of the
  // operand where this launch's binding starts. Products wrap in u32: the
  // difference is exact wherever the true offset lies inside the binding.
  qs: vec4<u32>,
  ks: vec4<u32>,
  vs: vec4<u32>,
  os: vec4<u32>,
  ms: vec4<u32>,
}

// Whether the launch writes split-KV states (see the fix-up pass below):
// PARTIAL 0 or 1 decides it for the pipeline; 2 (attention_block.wgsl, so
// that one pipeline serves every call) per launch, by a state row stride.
fn attn_partial() -> bool {
  return PARTIAL == 1u || (PARTIAL == 2u && P.o_stride != 0u);
}

// The key block of this invocation (P.kb_keys keys each, from key
// attn_kb * P.kb_keys of the launch): 0 but in attention_block.wgsl's
// key-block launches.
var<private> attn_kb: u32;

// Element of the binding where row i (of this launch) of Q head bh (global
// batch*heads + head) starts; likewise O, and key j of K/V head kvh
// (global batch*heads_kv + kv head).
fn attn_q_row(bh: u32, i: u32) -> u32 {
  return (bh / P.heads) * P.qs.x + (bh % P.heads) * P.qs.y +
         (P.q_first + i) * P.qs.z - P.qs.w;
}
fn attn_o_row(bh: u32, i: u32) -> u32 {
  if (attn_partial()) {  // states, packed: [key block][head][row]
    return ((attn_kb * P.bh_count + bh - P.bh_base) * P.seq_q + i) *
           P.o_stride;
  }
  return (bh / P.heads) * P.os.x + (bh % P.heads) * P.os.y +
         (P.q_first + i) * P.os.z - P.os.w;
}
fn attn_kv_head(bh: u32) -> u32 {
  return (bh / P.heads) * P.heads_kv + (bh % P.heads) / P.group;
}
fn attn_k_row(kvh: u32, j: u32) -> u32 {
  return (kvh / P.heads_kv) * P.ks.x + (kvh % P.heads_kv) * P.ks.y +
         (P.k_first + j) * P.ks.z - P.ks.w;
}
fn attn_v_row(kvh: u32, j: u32) -> u32 {
  return (kvh / P.heads_kv) * P.vs.x + (kvh % P.heads_kv) * P.vs.y +
         (P.k_first + j) * P.vs.z - P.vs.w;
}
// Element of the mask binding for key 0 (of this launch) of row i.
fn attn_m_row(bh: u32, i: u32) -> u32 {
  return (bh / P.heads) * P.ms.x + (bh % P.heads) * P.ms.y +
         (P.q_first + i) * P.ms.z + P.k_first - P.ms.w;
}

// softcap * tanh(x / softcap) (SOFTCAP == 1), NaN kept. tanh is 1 in f32
// from |t| = 9.1 on; clamping keeps implementations that form it from
// exp(2t) away from inf / inf, so +inf scores become softcap, as in the
// unfused formula.
fn attn_cap(x: f32) -> f32 {
  if (SOFTCAP == 0u) { return x; }
  let t = x / P.softcap;
  let nan = (bitcast<u32>(t) & 0x7fffffffu) > 0x7f800000u;
  return select(P.softcap * tanh(clamp(t, -10.0f, 10.0f)), t, nan);
}

const MASKED: f32 = -3.0e38f;

// Keys j < attn_visible_global(i) are visible to query i, both global
// indices (every mask is a prefix).
fn attn_visible_global(i: u32) -> u32 {
  let n = P.gkv;
  if (P.causal == 1u) {            // TOP_LEFT: j <= i
    return min(i + 1u, n);
  }
  if (P.causal == 2u) {            // BOTTOM_RIGHT: j <= i + seq_kv - seq_q
    if (i + 1u + n <= P.gq) { return 0u; }
    return min(i + 1u + n - P.gq, n);
  }
  return n;
}

// Keys j < attn_visible(i) of this launch are visible to its query row i.
fn attn_visible(i: u32) -> u32 {
  let g = attn_visible_global(P.q_first + i);
  return min(g - min(g, P.k_first), P.seq_kv);
}

// exp of x <= 0; far below the float range it is exactly 0.
fn attn_exp(x: f32) -> f32 {
  return select(exp(max(x, -87.0f)), 0.0f, x < -87.0f);
}

// Non-finite scores follow the unfused softmax(s) V of API.md, tracked
// apart from the running max (WGSL's max() with NaN is implementation-
// defined, and compilers may fold NaN comparisons), on the bit pattern:
// a NaN or +inf score makes the row NaN (exp(inf - inf)); a -inf score
// gets weight 0; a row whose visible scores are all -inf is NaN too
// (exp(-inf - -inf)). Only finite scores enter the max and the sums.
fn attn_bad(s: f32) -> bool {
  let b = bitcast<u32>(s);
  return (b & 0x7fffffffu) > 0x7f800000u || b == 0x7f800000u;
}
fn attn_finite(s: f32) -> bool {
  return (bitcast<u32>(s) & 0x7f800000u) != 0x7f800000u;
}
// Through a var: a constant bitcast to inf/NaN is a shader-creation error
// in Tint.
fn attn_nan() -> f32 { var b = 0x7fc00000u; return bitcast<f32>(b); }
fn attn_neg_inf() -> f32 { var b = 0xff800000u; return bitcast<f32>(b); }

// p * v, but nothing at all for weight 0, so that a NaN or infinite value
// of a key with weight 0 (a -inf score) does not reach the row.
fn attn_pv(p: f32, v: vec4<f32>) -> vec4<f32> {
  return select(vec4<f32>(0.0f), p * v, p > 0.0f);
}

// acc rescaled by alpha = exp(m - m_new) to a new running max; alpha 0 (the
// max rose by more than 87) drops the whole sum, since every key in it now
// has weight 0 (attn_exp), so that a NaN or infinite value summed before
// does not come back as 0 * inf.
fn attn_rescale(acc: vec4<f32>, alpha: f32) -> vec4<f32> {
  return select(acc * alpha, vec4<f32>(0.0f), alpha == 0.0f);
}

// The output of a row from its sums: NaN (bad, or keys seen but none with
// a finite score), zeros (no key seen), else acc / l.
fn attn_out(acc: vec4<f32>, l: f32, bad: bool, vis: u32) -> vec4<f32> {
  if (bad || (vis > 0u && l == 0.0f)) { return vec4<f32>(attn_nan()); }
  return select(vec4<f32>(0.0f), acc / l, l > 0.0f);
}

// The split-KV state's m and l of a row (kernels/attention_combine.wgsl):
// l = NaN marks a bad row, m = -inf with l = 0 a row whose visible keys all
// scored -inf (NaN unless another block has a finite score).
fn attn_state_m(m: f32, l: f32, vis: u32) -> f32 {
  if (vis > 0u && l == 0.0f) { return attn_neg_inf(); }
  return m;
}
fn attn_state_l(l: f32, bad: bool) -> f32 {
  return select(l, attn_nan(), bad);
}

// ---- Non-finite values of V: the fix-up pass ---------------------------
//
// The streaming kernels weigh a key against the running max when they read
// it. An infinity or NaN of V read with a non-zero weight stays in its
// accumulator (inf * alpha is inf), though the max may then rise by more
// than 87 over several smaller steps, leaving the key's final weight
// exp(s - max) 0 (attn_exp): it must not reach the row (API.md). Only
// then, or after a finite overflow, does an accumulator end non-finite, so
// the kernels test that at the end (nothing in the loop over keys) and
// walk such a row again with its final max m (attn_fix, in
// attention_fix16.wgsl or attention_fix1.wgsl): each key's score formed as
// they form it, its weight attn_exp(s - m), the sums rebuilt in place in
// the output row. Below: its loads and stores.
//
// PARTIAL (split-KV): the final max is the combine's, so a state row holds,
// after acc (head_dim_v), m and l, four extras per dim (ATTN_X): the finite
// part of acc and, for +inf, -inf and NaN, the largest score of a key
// holding that value with a non-zero weight here (-inf: none). They are
// written only where acc ends non-finite, which tells the combine to read
// them (kernels/attention_combine.wgsl): a value reaches the row iff its
// score is at most 87 below the combined max.
//
// Loops: keys in blocks of 16, each costing hd4 + en + 1 iterations;
// max_keys (src/webgpu/attention.c) keeps a launch's loop over its keys
// and this pass together within llvmpipe's budget.

const ATTN_X: u32 = 4u;  // extras per dim of a state row

fn attn_nonfinite4(x: vec4<f32>) -> vec4<bool> {
  let inf = vec4<u32>(0x7f800000u);
  return (bitcast<vec4<u32>>(x) & inf) == inf;
}

// Whether any lane of x, a row's accumulator, is not finite.
fn attn_needs_fix(x: vec4<f32>) -> bool {
  return any(attn_nonfinite4(x));
}

// Through a var, as attn_nan.
fn attn_inf() -> f32 { var b = 0x7f800000u; return bitcast<f32>(b); }

// Element of the state row (PARTIAL) where the extras of dim d start.
fn attn_x_at(o_row: u32, d: u32) -> u32 {
  return o_row + P.head_dim_v + 2u + ATTN_X * d;
}

// The fix-up's accumulator of dim d: the output element, or (PARTIAL) the
// finite part among the extras.
fn attn_fix_at(o_row: u32, d: u32) -> u32 {
  if (attn_partial()) { return attn_x_at(o_row, d); }
  return o_row + d;
}
fn attn_fix_ld(o_row: u32, d: u32) -> vec4<f32> {
  let hdv = P.head_dim_v;
  var y = vec4<f32>(0.0f);
  if (d < hdv) { y.x = o_ld(attn_fix_at(o_row, d)); }
  if (d + 1u < hdv) { y.y = o_ld(attn_fix_at(o_row, d + 1u)); }
  if (d + 2u < hdv) { y.z = o_ld(attn_fix_at(o_row, d + 2u)); }
  if (d + 3u < hdv) { y.w = o_ld(attn_fix_at(o_row, d + 3u)); }
  return y;
}
fn attn_fix_st(o_row: u32, d: u32, y: vec4<f32>) {
  let hdv = P.head_dim_v;
  if (d < hdv) { o_st(attn_fix_at(o_row, d), y.x); }
  if (d + 1u < hdv) { o_st(attn_fix_at(o_row, d + 1u), y.y); }
  if (d + 2u < hdv) { o_st(attn_fix_at(o_row, d + 2u), y.z); }
  if (d + 3u < hdv) { o_st(attn_fix_at(o_row, d + 3u), y.w); }
}

// PARTIAL: the extras of dim d start empty (finite part 0, no score).
fn attn_fix_clear1(o_row: u32, d: u32) {
  if (d < P.head_dim_v) {
    let x = attn_x_at(o_row, d);
    o_st(x, 0.0f);
    o_st(x + 1u, -attn_inf());
    o_st(x + 2u, -attn_inf());
    o_st(x + 3u, -attn_inf());
  }
}

// The fix-up's vec4s e0 + es * t (t < en) of the row at o_row start at 0
// (PARTIAL: the extras empty too) ...
fn attn_fix_begin(o_row: u32, e0: u32, es: u32, en: u32) {
  for (var t = 0u; t < en; t++) {
    let d = 4u * (e0 + es * t);
    attn_fix_st(o_row, d, vec4<f32>(0.0f));
    if (attn_partial()) {
      attn_fix_clear1(o_row, d);
      attn_fix_clear1(o_row, d + 1u);
      attn_fix_clear1(o_row, d + 2u);
      attn_fix_clear1(o_row, d + 3u);
    }
  }
}
// ... and end divided by the sum of the weights l: the row's max scores 1
// (exp(0)), so l >= 1. PARTIAL keeps sums.
fn attn_fix_end(o_row: u32, l: f32, e0: u32, es: u32, en: u32) {
  if (!attn_partial() && l > 0.0f) {
    for (var t = 0u; t < en; t++) {
      let d = 4u * (e0 + es * t);
      attn_fix_st(o_row, d, attn_fix_ld(o_row, d) / l);
    }
  }
}

// PARTIAL: per lane of dims d..d+3, the largest score of a key of
// non-zero weight whose value there is +inf (x), -inf (y), NaN (z); -inf
// for none. Kept in registers over a block of keys (selects, no
// branches), then merged into the extras once (attn_fix_top_st).
struct AttnTop {
  x: vec4<f32>,
  y: vec4<f32>,
  z: vec4<f32>,
}
fn attn_fix_top_add(t: ptr<function, AttnTop>, p: f32, s: f32, v: vec4<f32>) {
  let b = bitcast<vec4<u32>>(v);
  let w = vec4<bool>(p > 0.0f);
  let sv = vec4<f32>(s);
  let pos = w & (b == vec4<u32>(0x7f800000u));
  let neg = w & (b == vec4<u32>(0xff800000u));
  let nan = w & ((b & vec4<u32>(0x7fffffffu)) > vec4<u32>(0x7f800000u));
  (*t).x = select((*t).x, max((*t).x, sv), pos);
  (*t).y = select((*t).y, max((*t).y, sv), neg);
  (*t).z = select((*t).z, max((*t).z, sv), nan);
}
fn attn_fix_top_st1(x: u32, t: vec3<f32>) {
  o_st(x + 1u, max(o_ld(x + 1u), t.x));
  o_st(x + 2u, max(o_ld(x + 2u), t.y));
  o_st(x + 3u, max(o_ld(x + 3u), t.z));
}
fn attn_fix_top_st(o_row: u32, d: u32, t: AttnTop) {
  let ninf = vec4<f32>(-attn_inf());
  if (all(t.x == ninf) && all(t.y == ninf) && all(t.z == ninf)) {
    return;
  }
  let hdv = P.head_dim_v;
  if (d < hdv) {
    attn_fix_top_st1(attn_x_at(o_row, d), vec3<f32>(t.x.x, t.y.x, t.z.x));
  }
  if (d + 1u < hdv) {
    attn_fix_top_st1(attn_x_at(o_row, d + 1u), vec3<f32>(t.x.y, t.y.y, t.z.y));
  }
  if (d + 2u < hdv) {
    attn_fix_top_st1(attn_x_at(o_row, d + 2u), vec3<f32>(t.x.z, t.y.z, t.z.z));
  }
  if (d + 3u < hdv) {
    attn_fix_top_st1(attn_x_at(o_row, d + 3u), vec3<f32>(t.x.w, t.y.w, t.z.w));
  }
}

// One key's share of dims d..d+3 in the fix-up: p * v as IEEE has it
// (attn_pv), or (PARTIAL) its finite lanes, the others to the AttnTop t.
fn attn_fix_pv(t: ptr<function, AttnTop>, p: f32, s: f32, v: vec4<f32>)
    -> vec4<f32> {
  if (!attn_partial()) {
    return attn_pv(p, v);
  }
  attn_fix_top_add(t, p, s, v);
  return attn_pv(p, select(v, vec4<f32>(0.0f), attn_nonfinite4(v)));
}

// Dims d..d+3 of a Q, K or V row (x) starting at element r, head size hd,
// for the fix-up: each kernel defines attn_fix_row (attention_block.wgsl
// with its vec4 loads, the others as attn_fix_row_any). Load sites are
// most of the pass's code, and compile time on llvmpipe.
const ATTN_FIX_Q: u32 = 0u;
const ATTN_FIX_K: u32 = 1u;
const ATTN_FIX_V: u32 = 2u;
// As attn_ld_q/k/v give them but without branches: indices past the row
// read its last element (never outside the operand), then 0.
fn attn_fix_ld1(x: u32, at: u32) -> f32 {
  switch x {
    case ATTN_FIX_Q: { return q_ld(at); }
    case ATTN_FIX_K: { return k_ld(at); }
    default: { return v_ld(at); }
  }
}
fn attn_fix_row_any(x: u32, r: u32, d: u32, hd: u32) -> vec4<f32> {
  let at = r + d;
  let last = r + max(hd, 1u) - 1u;
  let y = vec4<f32>(attn_fix_ld1(x, min(at, last)),
                    attn_fix_ld1(x, min(at + 1u, last)),
                    attn_fix_ld1(x, min(at + 2u, last)),
                    attn_fix_ld1(x, min(at + 3u, last)));
  return select(vec4<f32>(0.0f), y,
                vec4<u32>(d) + vec4<u32>(0u, 1u, 2u, 3u) < vec4<u32>(hd));
}

// Elements at..at+3 of a row whose dims d..d+3 may pass the head_dim hd
// (those read as 0).
fn attn_ld_q(at: u32, d: u32, hd: u32) -> vec4<f32> {
  var x = vec4<f32>(0.0f);
  if (d < hd) { x.x = q_ld(at); }
  if (d + 1u < hd) { x.y = q_ld(at + 1u); }
  if (d + 2u < hd) { x.z = q_ld(at + 2u); }
  if (d + 3u < hd) { x.w = q_ld(at + 3u); }
  return x;
}
fn attn_ld_k(at: u32, d: u32, hd: u32) -> vec4<f32> {
  var x = vec4<f32>(0.0f);
  if (d < hd) { x.x = k_ld(at); }
  if (d + 1u < hd) { x.y = k_ld(at + 1u); }
  if (d + 2u < hd) { x.z = k_ld(at + 2u); }
  if (d + 3u < hd) { x.w = k_ld(at + 3u); }
  return x;
}
fn attn_ld_v(at: u32, d: u32, hd: u32) -> vec4<f32> {
  var x = vec4<f32>(0.0f);
  if (d < hd) { x.x = v_ld(at); }
  if (d + 1u < hd) { x.y = v_ld(at + 1u); }
  if (d + 2u < hd) { x.z = v_ld(at + 2u); }
  if (d + 3u < hd) { x.w = v_ld(at + 3u); }
  return x;
}

// Stores x at..at+3 of a row, skipping dims past the head_dim hd.
fn attn_st_o(at: u32, d: u32, hd: u32, x: vec4<f32>) {
  if (d < hd) { o_st(at, x.x); }
  if (d + 1u < hd) { o_st(at + 1u, x.y); }
  if (d + 2u < hd) { o_st(at + 2u, x.z); }
  if (d + 3u < hd) { o_st(at + 3u, x.w); }
}
