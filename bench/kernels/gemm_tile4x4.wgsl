// Baseline: the plain register tile. Each invocation computes 4 rows by 4
// columns of C, reading B (row-major, n a multiple of 4) as vec4 and A
// through element strides; no workgroup memory; 8x8 invocations.
struct Params {
  m: u32, n: u32, k: u32, batch: u32,
  a_row: u32, a_col: u32, a_batch: u32, b_row: u32,
  b_col: u32, b_batch: u32, c_batch: u32, pad: u32,
}
@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> c: array<vec4<f32>>;
@group(0) @binding(3) var<uniform> p: Params;

@compute @workgroup_size(8, 8, 1)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
  let col4 = id.x;
  let row = id.y * 4u;
  let nv = p.n / 4u;
  if (col4 >= nv || row >= p.m) {
    return;
  }
  let a0 = id.z * p.a_batch + row * p.a_row;
  let bb = id.z * (p.b_batch / 4u) + col4;
  var c0 = vec4<f32>(0.0);
  var c1 = vec4<f32>(0.0);
  var c2 = vec4<f32>(0.0);
  var c3 = vec4<f32>(0.0);
  for (var i = 0u; i < p.k; i++) {
    let bv = b[bb + i * nv];
    let ai = a0 + i * p.a_col;
    c0 += a[ai] * bv;
    c1 += a[ai + p.a_row] * bv;
    c2 += a[ai + 2u * p.a_row] * bv;
    c3 += a[ai + 3u * p.a_row] * bv;
  }
  let cb = id.z * (p.c_batch / 4u) + row * nv + col4;
  c[cb] = c0;
  c[cb + nv] = c1;
  c[cb + 2u * nv] = c2;
  c[cb + 3u * nv] = c3;
}
