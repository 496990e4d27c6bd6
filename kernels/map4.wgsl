// map.wgsl over vec4s: y4[i] = apply(x4[i]) lane by lane for i < n (n
// counts vec4s), with apply from the file before this one. Each
// invocation handles 4 vec4s, a workgroup 256 (1024 floats). On CPU
// adapters (CPU true) an invocation's vec4s are adjacent, so each SIMD
// lane streams 64 contiguous bytes; on GPUs they are 64 vec4s apart, so
// each step of the workgroup reads one contiguous kilobyte.

struct Params {
  off: vec4<u32>,
  n: u32,
  alpha: f32,
  beta: f32,
}

fn apply4(v: vec4<f32>) -> vec4<f32> {
  return vec4<f32>(apply(v.x), apply(v.y), apply(v.z), apply(v.w));
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let base = wg_linear_group(wid, nwg) * 256u;
  for (var j = 0u; j < 4u; j++) {
    let i = select(base + j * 64u + li, base + li * 4u + j, CPU);
    if (i < P.n) {
      y_st4(i, apply4(x_ld4(i)));
    }
  }
}
