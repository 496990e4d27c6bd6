// softmax, log-softmax, LayerNorm or RMSNorm in one launch, on CPU adapters,
// where every row folds in one run (host: src/webgpu/norm.c): invocation
// (o, i) folds its row of [outer, len, inner] into its final record
// (kernels/norm_fold.wgsl) and then writes the row (norm_value.wgsl), so
// no record goes through memory and LayerNorm's scale and bias bind apart
// (x, s, b, y; a stand-in for an absent one). An invocation reads its row
// whole before writing it, and rows are disjoint: y may be x.
// Prelude consts: KIND, FROM_X (1); AFFINE 0: none, 1: times s[r], 2: plus
// b[r], 3: times s[r] plus b[r]. The row is written by fn norm_write (the
// file before this one: norm_row_st.wgsl element by element,
// norm_row_words.wgsl by whole words of a 2-byte y) through norm_out.

struct Params {
  off: vec4<u32>,
  n_o: u32,   // outer indices
  n_i: u32,   // columns
  rows: u32,  // the axis length
  in_so: u32, // x and y stride between outer indices
  in_sr: u32, // x and y stride along the axis
  len: f32,   // the axis length
  eps: f32,
  zero: u32,  // 0, unknown to the compiler (wgc_opaque)
}

@compute @workgroup_size(16)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let t = wg_linear_group(wid, nwg) * 16u + li;
  if (t >= P.n_o * P.n_i) { return; }
  let o = t / P.n_i;
  let e0 = o * P.in_so + (t - o * P.n_i);
  ns_stride = P.in_sr;
  norm_write(e0, ns_final(ns_chunk(e0, P.rows)));
}

// y at e, element r of its row whose final record is st.
fn norm_out(e: u32, r: u32, st: vec4<f32>) -> f32 {
  let v = norm_value(x_ld(e), st);
  var y = v.x;
  if (AFFINE == 1u) { y = (y * s_ld(r)) * v.y; }
  if (AFFINE == 2u) { y = y + b_ld(r); }
  if (AFFINE == 3u) { y = (y * s_ld(r)) * v.y + b_ld(r); }
  return y;
}
