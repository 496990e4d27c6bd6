// Unfused attention, step 1: the full score matrix
// S[h, i, j] = scale * dot(Q[h, i], K[h, j]), -inf above the diagonal when
// causal. One score per invocation.
struct Params {
  seq: u32, dim: u32, causal: u32, heads: u32,  // seq: keys
  scale: f32, rows: u32, pad1: u32, pad2: u32,  // rows: query rows a head
}
@group(0) @binding(0) var<storage, read> q: array<f32>;
@group(0) @binding(1) var<storage, read> k: array<f32>;
@group(0) @binding(2) var<storage, read_write> s: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

@compute @workgroup_size(8, 8, 1)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
  let j = id.x;
  let i = id.y;
  if (i >= p.rows || j >= p.seq) {
    return;
  }
  let out = (id.z * p.rows + i) * p.seq + j;
  if (p.causal != 0u && j > i) {
    s[out] = bitcast<f32>(0xff800000u);
    return;
  }
  let qb = (id.z * p.rows + i) * p.dim;
  let kb = (id.z * p.seq + j) * p.dim;
  var acc = 0.0;
  for (var d = 0u; d < p.dim; d++) {
    acc += q[qb + d] * k[kb + d];
  }
  s[out] = acc * p.scale;
}
