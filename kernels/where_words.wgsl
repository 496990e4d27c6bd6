// where.wgsl's out[i] = cond ? a : b for words.wgsl, which follows it (out
// a 2-byte type); cond tested on its bits as there.

struct Params {
  off: vec4<u32>,
  count: u32,
  rank: u32,
  dim: array<vec4<u32>, 8>,
}

fn elem_count() -> u32 { return P.count; }
fn elem(i: u32) -> f32 {
  let o = wgc_unravel(i);
  if ((bitcast<u32>(cond_ld(o.x)) << 1u) != 0u) {
    return a_ld(o.y);
  }
  return b_ld(o.z);
}
