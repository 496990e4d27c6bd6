// out[i] = cond ? a : b over a contiguous output of up to 8 dimensions, the
// inputs read through per-dimension strides (0 where broadcast; dim[d] is
// (extent, stride of cond, of a, of b), see unravel.wgsl). cond is
// true unless +0 or -0, tested on its bits: a NaN compares false with
// everything in WGSL, and an adapter that flushes subnormals must not turn
// a tiny cond false.

struct Params {
  off: vec4<u32>,
  count: u32,
  rank: u32,
  dim: array<vec4<u32>, 8>,
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let base = wg_linear_group(wid, nwg) * 1024u + li;
  for (var j = 0u; j < 4u; j++) {
    let i = base + j * 256u;
    if (i >= P.count) { return; }
    let o = wgc_unravel(i);
    if ((bitcast<u32>(cond_ld(o.x)) << 1u) != 0u) {
      out_st(i, a_ld(o.y));
    } else {
      out_st(i, b_ld(o.z));
    }
  }
}
