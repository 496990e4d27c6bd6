// Unfused attention, step 3: O[h, i, d] = sum_j P[h, i, j] V[h, j, d].
// One output element per invocation.
struct Params {
  seq: u32, dim: u32, causal: u32, heads: u32,  // seq: keys
  scale: f32, rows: u32, pad1: u32, pad2: u32,  // rows: query rows a head
}
@group(0) @binding(0) var<storage, read> pm: array<f32>;
@group(0) @binding(1) var<storage, read> v: array<f32>;
@group(0) @binding(2) var<storage, read_write> o: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

@compute @workgroup_size(8, 8, 1)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
  let d = id.x;
  let i = id.y;
  if (i >= p.rows || d >= p.dim) {
    return;
  }
  let pb = (id.z * p.rows + i) * p.seq;
  let vb = id.z * p.seq * p.dim + d;
  var acc = 0.0;
  for (var j = 0u; j < p.seq; j++) {
    acc += pm[pb + j] * v[vb + j * p.dim];
  }
  o[(id.z * p.rows + i) * p.dim + d] = acc;
}
