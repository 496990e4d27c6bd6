// The per-op limit: the smallest useful kernel, x = -x over n floats.
struct Params {
  n: u32, pad0: u32, pad1: u32, pad2: u32,
}
@group(0) @binding(0) var<storage, read_write> x: array<f32>;
@group(0) @binding(1) var<uniform> p: Params;

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
  if (id.x < p.n) {
    x[id.x] = -x[id.x];
  }
}
