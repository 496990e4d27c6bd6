// The copy-kernel baseline: y = x as vec4s, one per invocation, the
// simplest streaming kernel an adapter can run. The grid is 2-D: 16M
// floats are more vec4 workgroups than one dimension holds.
struct Params {
  n4: u32, pad0: u32, pad1: u32, pad2: u32,
}
@group(0) @binding(0) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> y: array<vec4<f32>>;
@group(0) @binding(2) var<uniform> p: Params;

@compute @workgroup_size(256, 1, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let i = (wid.x + wid.y * nwg.x) * 256u + li;
  if (i < p.n4) {
    y[i] = x[i];
  }
}
