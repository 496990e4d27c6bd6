// y += bias[r] over a box of rows of LayerNorm's output (host:
// src/webgpu/norm.c): the launch after a scaled one, since a launch binds
// at most four operands. One invocation per element (o, r).

struct Params {
  off: vec4<u32>,
  n_o: u32, // outer indices in this launch
  n_r: u32, // rows in this launch
  in_so: u32,
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let t = wg_linear_group(wid, nwg) * 256u + li;
  if (t >= P.n_o * P.n_r) { return; }
  let o = t / P.n_r;
  let r = t - o * P.n_r;
  let e = o * P.in_so + r;
  y_st(e, y_ld(e) + p_ld(r));
}
