// map.wgsl for short runs: one element per invocation, 64 a workgroup.
// A software adapter runs every invocation of a workgroup whether it has
// an element or not, so map.wgsl's 256 (four elements each) cost a run of
// 16 floats some four times the work of the elements themselves.

struct Params {
  off: vec4<u32>,
  n: u32,
  alpha: f32,
  beta: f32,
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let i = wg_linear_group(wid, nwg) * 64u + li;
  if (i < P.n) {
    y_st(i, apply(x_ld(i)));
  }
}
