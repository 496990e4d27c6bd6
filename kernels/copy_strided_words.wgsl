// copy_strided.wgsl for words.wgsl, which follows it: a contiguous 2-byte
// dst (named out) at the flat index, src read through its strides.

struct Params {
  off: vec4<u32>,
  count: u32,
  rank: u32,
  dim: array<vec4<u32>, 8>,
}

fn elem_count() -> u32 { return P.count; }
fn elem(i: u32) -> f32 { return src_ld(wgc_unravel(i).x); }
