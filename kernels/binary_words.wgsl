// binary.wgsl's out[i] = a[ia] OP b[ib] for words.wgsl, which follows it
// (out a 2-byte type).

struct Params {
  off: vec4<u32>,
  count: u32,
  rank: u32,
  dim: array<vec4<u32>, 8>,
}

fn elem_count() -> u32 { return P.count; }
fn elem(i: u32) -> f32 {
  var o: vec3<u32>;
  if (RANK == 1u) {
    o = i * P.dim[0].yzw;
  } else {
    o = wgc_unravel(i);
  }
  return apply(a_ld(o.x), b_ld(o.y));
}
