// map.wgsl's y[i] = apply(x[i]) for words.wgsl, which follows it: the
// output (a 2-byte type) is named out.

struct Params {
  off: vec4<u32>,
  n: u32,
  alpha: f32,
  beta: f32,
}

fn elem_count() -> u32 { return P.n; }
fn elem(i: u32) -> f32 { return apply(x_ld(i)); }
