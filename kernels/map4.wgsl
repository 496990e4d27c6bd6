// map.wgsl over vec4s: y4[i] = apply(x4[i]) lane by lane for i < n (n
// counts vec4s), with apply from the file before this one. Each
// invocation handles 4 vec4s 256 apart, a workgroup 1024 vec4s (4096
// floats): of the layouts measured (1, 2 or 4 vec4s per invocation,
// adjacent or strided, workgroups of 64 or 256) this one was among the
// fastest on lavapipe and the fastest on SwiftShader (RELU 0.48 GB/s
// against 0.30 with one vec4 each), and each step of a workgroup reads
// 4 KiB contiguous, as a GPU wants.

struct Params {
  off: vec4<u32>,
  n: u32,
  alpha: f32,
  beta: f32,
}

fn apply4(v: vec4<f32>) -> vec4<f32> {
  return vec4<f32>(apply(v.x), apply(v.y), apply(v.z), apply(v.w));
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let base = wg_linear_group(wid, nwg) * 1024u + li;
  for (var j = 0u; j < 4u; j++) {
    let i = base + j * 256u;
    if (i < P.n) {
      y_st4(i, apply4(x_ld4(i)));
    }
  }
}
