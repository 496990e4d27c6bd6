// RotaryEmbedding (ONNX, opset 23) over rows of head_dim (host:
// src/webgpu/rotary.c). Per row, invocation k < half rotates the pair
// (x[i1], x[i2]) by cos c[k] and sin s[k] of the row's (batch, seq) cache
// row; the others copy one of the dimensions past rotary_dim.
// Prelude consts: INTERLEAVED 1: pairs (2k, 2k + 1), else (k, k + half);
// BHSD 1: rows are [batch, heads, seq], else [batch, seq, heads].

struct Params {
  off: vec4<u32>,
  rows: u32,  // rows in this launch
  row0: u32,  // the absolute index of its first row
  seq: u32,
  heads: u32,
  hd: u32,    // head_dim
  half: u32,  // rotary_dim / 2
  per: u32,   // invocations per row: half + head_dim - rotary_dim
  crow0: u32, // the (batch, seq) cache row at element 0 of c and s
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let t = wg_linear_group(wid, nwg) * 256u + li;
  if (t >= P.rows * P.per) { return; }
  let rl = t / P.per;
  let k = t - rl * P.per;
  let base = rl * P.hd;
  if (k >= P.half) {
    let e = base + k + P.half; // rotary_dim + (k - half)
    y_st(e, x_ld(e));
    return;
  }
  let row = P.row0 + rl;
  var b: u32;
  var s: u32;
  if (BHSD == 1u) {
    b = row / (P.heads * P.seq);
    s = row % P.seq;
  } else {
    b = row / (P.seq * P.heads);
    s = (row / P.heads) % P.seq;
  }
  let ci = (b * P.seq + s - P.crow0) * P.half + k;
  var i1 = base + k;
  var i2 = base + k + P.half;
  if (INTERLEAVED == 1u) {
    i1 = base + 2u * k;
    i2 = i1 + 1u;
  }
  let cv = c_ld(ci);
  let sv = s_ld(ci);
  let x1 = x_ld(i1);
  let x2 = x_ld(i2);
  y_st(i1, cv * x1 - sv * x2);
  y_st(i2, sv * x1 + cv * x2);
}
