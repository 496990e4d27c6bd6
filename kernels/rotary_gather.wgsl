// The cos or sin cache rows of RotaryEmbedding's position ids, gathered
// into [batch * seq, half] (host: src/webgpu/rotary.c). A launch sees the
// columns [0, nc) of cache rows [p0, p0 + np) (cache and out start at its
// first column; nc is half unless a row exceeds a binding window) and
// writes the entries whose id falls there; with zeros == 1 it also writes
// 0 for ids outside [0, max_positions), so every entry is written by
// exactly one launch and no read leaves the cache. The int32 ids are read
// through the f32 accessor by bit pattern.

struct Params {
  off: vec4<u32>,
  n: u32,     // entries (ids * nc) in this launch
  half: u32,  // the row length of cache and out
  p0: u32,
  np: u32,
  maxpos: u32,
  zeros: u32,
  nc: u32,    // columns in this launch
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let t = wg_linear_group(wid, nwg) * 256u + li;
  if (t >= P.n) { return; }
  let j = t / P.nc;
  let k = t - j * P.nc;
  let o = j * P.half + k;
  let p = bitcast<i32>(pos_ld(j));
  if (p < 0 || u32(p) >= P.maxpos) {
    if (P.zeros == 1u) { out_st(o, 0.0f); }
    return;
  }
  let q = u32(p);
  if (q >= P.p0 && q - P.p0 < P.np) {
    out_st(o, cache_ld((q - P.p0) * P.half + k));
  }
}
