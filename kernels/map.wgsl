// y[i] = apply(x[i]) for i < n, with apply from the file before this one
// (unary_map: the op OP with parameters alpha and beta; copy: the
// identity). Each invocation handles 4
// elements, one workgroup 1024.

struct Params {
  off: vec4<u32>,
  n: u32,
  alpha: f32,
  beta: f32,
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let base = wg_linear_group(wid, nwg) * 1024u + li;
  for (var j = 0u; j < 4u; j++) {
    let i = base + j * 256u;
    if (i < P.n) {
      y_st(i, apply(x_ld(i)));
    }
  }
}
