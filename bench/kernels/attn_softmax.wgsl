// Unfused attention, step 2: each row of S becomes its max-subtracted
// softmax, in place. One row per invocation.
struct Params {
  seq: u32, dim: u32, causal: u32, heads: u32,  // seq: keys
  scale: f32, rows: u32, pad1: u32, pad2: u32,  // rows: query rows a head
}
@group(0) @binding(0) var<storage, read_write> s: array<f32>;
@group(0) @binding(1) var<uniform> p: Params;

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
  let rows = p.rows * p.heads;
  if (id.x >= rows) {
    return;
  }
  let base = id.x * p.seq;
  var m = bitcast<f32>(0xff800000u);
  for (var j = 0u; j < p.seq; j++) {
    m = max(m, s[base + j]);
  }
  var sum = 0.0;
  for (var j = 0u; j < p.seq; j++) {
    let e = exp(s[base + j] - m);
    s[base + j] = e;
    sum += e;
  }
  let inv = 1.0 / sum;
  for (var j = 0u; j < p.seq; j++) {
    s[base + j] *= inv;
  }
}
