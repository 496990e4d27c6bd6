// y[i] = f(x[i]) for i < n; OP (a wgc_unary_op) comes from the prelude.
// Each invocation handles 4 elements, one workgroup 1024.

struct Params {
  off: vec4<u32>,
  n: u32,
}

fn apply(x: f32) -> f32 {
  switch OP {
    case 0u: { if (wgc_is_nan(x)) { return x; } return max(x, 0.0f); }
    case 1u: { return wgc_sigmoid(x); }
    case 2u: { return wgc_tanh(x); }
    case 3u: { return wgc_exp(x); }
    case 4u: { return wgc_log(x); }
    case 5u: { if (x < 0.0f) { return wgc_nan(); } return sqrt(x); }
    case 6u: { return abs(x); }
    case 7u: { return -x; }
    case 8u: { return wgc_gelu(x); }
    default: { return x * wgc_sigmoid(x); }
  }
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
