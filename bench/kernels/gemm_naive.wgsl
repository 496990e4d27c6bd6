// Baseline: one output per invocation, every operand read straight from
// storage. C[z] = A[z] * B[z], operands addressed through element strides
// so that one kernel takes every transpose.
struct Params {
  m: u32, n: u32, k: u32, batch: u32,
  a_row: u32, a_col: u32, a_batch: u32, b_row: u32,
  b_col: u32, b_batch: u32, c_batch: u32, pad: u32,
}
@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> c: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

@compute @workgroup_size(8, 8, 1)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
  let col = id.x;
  let row = id.y;
  if (col >= p.n || row >= p.m) {
    return;
  }
  let ab = id.z * p.a_batch + row * p.a_row;
  let bb = id.z * p.b_batch + col * p.b_col;
  var acc = 0.0;
  for (var i = 0u; i < p.k; i++) {
    acc += a[ab + i * p.a_col] * b[bb + i * p.b_row];
  }
  c[id.z * p.c_batch + row * p.n + col] = acc;
}
