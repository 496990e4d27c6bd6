// Shared by the steps of attention's unfused path (host:
// src/webgpu/attention_unfused.c), for query rows too long for the fused
// kernels: the scores S = scale * Q K^T of a block of query rows are a GEMM
// into scratch; then per launch a window of rows (and of keys, or of
// output dims) of one head:
//   attention_unfused_stats  S := attn_masked(cap(S)), the row's running
//                            max m and sum l of exp(s - m) in st,
//   attention_unfused_probs  S := exp(s - m), 0 where the key is hidden,
//   attention_unfused_pv     O += (sum of p * v over keys with p != 0) / l,
//                            in place (attention_unfused_o), or for a
//                            2-byte O in f32 sums written to O once, from
//                            the row's last keys (attention_unfused_ox).
// Non-finite scores follow attention_common.wgsl: a NaN or +inf score, or
// a row whose visible scores are all -inf, is marked by l = NaN, which the
// PV step turns into a NaN row; a key of weight 0 adds nothing, whatever
// its value holds.

struct Params {
  off: vec4<u32>,
  off2: vec4<u32>,  // operand 4: PV's f32 sums of a 2-byte O
  rows: u32,    // query rows of the launch
  keys: u32,    // keys of the launch
  dims: u32,    // output dims of the launch (PV)
  row0: u32,    // global query index of the launch's row 0
  key0: u32,    // global index of the launch's key 0
  ld_s: u32,    // elements between score rows (0 for one row)
  ms: u32,      // between mask rows
  vs: u32,      // between V rows (keys)
  os: u32,      // between O rows
  causal: u32,  // a wgc_causal
  gq: u32,      // the call's seq_q and seq_kv
  gkv: u32,
  softcap: f32, // > 0 when SOFTCAP == 1
  first: u32,   // 1: the launch's keys start the row (no state to read)
  last: u32,    // 1: they end it (stats: the row's state is final)
  xs: u32,      // between rows of PV's sums (attention_unfused_ox)
}

// Keys j < uf_visible(i) are seen by query row i (global indices).
fn uf_visible(i: u32) -> u32 {
  let n = P.gkv;
  if (P.causal == 1u) {
    return min(i + 1u, n);
  }
  if (P.causal == 2u) {
    if (i + 1u + n <= P.gq) { return 0u; }
    return min(i + 1u + n - P.gq, n);
  }
  return n;
}

// Keys of this launch that row r (of the launch) sees.
fn uf_seen(r: u32) -> u32 {
  let g = uf_visible(P.row0 + r);
  return min(g - min(g, P.key0), P.keys);
}

// exp of x <= 0; far below the float range it is exactly 0.
fn uf_exp(x: f32) -> f32 {
  return select(exp(max(x, -87.0f)), 0.0f, x < -87.0f);
}

// Through a var: a constant bitcast to NaN is a shader-creation error in
// Tint.
fn uf_nan() -> f32 { var b = 0x7fc00000u; return bitcast<f32>(b); }

// Decided on the bit pattern: compilers may fold comparisons with NaN.
fn uf_is_nan(x: f32) -> bool {
  return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u;
}
fn uf_finite(s: f32) -> bool {
  return (bitcast<u32>(s) & 0x7f800000u) != 0x7f800000u;
}
