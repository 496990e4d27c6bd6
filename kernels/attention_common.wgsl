// Shared by the attention kernels (attention.wgsl: staged through
// workgroup memory; attention_regs.wgsl: without it, for CPU adapters),
// each concatenated after this file and after attention_mask.wgsl or
// attention_nomask.wgsl (attn_masked: the additive mask or nothing): the
// Params both take from src/webgpu/attention.c, strided row addressing,
// softcap, the causal masks, and row loads and stores that stop at a
// head size. A score is attn_masked(attn_cap(scale * q.k), at).

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
  o_stride: u32,  // PARTIAL: elements between state rows (head_dim_v + 2)
  pad0: u32,
  // Element strides over (batch, head, seq) and, in w, the element of the
  // operand where this launch's binding starts. Products wrap in u32: the
  // difference is exact wherever the true offset lies inside the binding.
  qs: vec4<u32>,
  ks: vec4<u32>,
  vs: vec4<u32>,
  os: vec4<u32>,
  ms: vec4<u32>,
}

// Element of the binding where row i (of this launch) of Q head bh (global
// batch*heads + head) starts; likewise O, and key j of K/V head kvh
// (global batch*heads_kv + kv head).
fn attn_q_row(bh: u32, i: u32) -> u32 {
  return (bh / P.heads) * P.qs.x + (bh % P.heads) * P.qs.y +
         (P.q_first + i) * P.qs.z - P.qs.w;
}
fn attn_o_row(bh: u32, i: u32) -> u32 {
  if (PARTIAL == 1u) {  // states of the launch's one head, packed
    return i * P.o_stride;
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
