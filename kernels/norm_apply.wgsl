// The output of softmax, log-softmax, LayerNorm or RMSNorm from the final
// records of kernels/norm_stats.wgsl (host: src/webgpu/norm.c). Each
// invocation writes items consecutive elements of a box of [outer, len,
// inner] (inner fastest), stepping its (o, r, i) index without dividing.
// Prelude consts: KIND as norm_stats; AFFINE 0: none, 1: times p[r]
// (scale), 2: plus p[r] (bias), 3: times p[2r] plus p[2r + 1] (scale and
// bias packed side by side by kernels/norm_pack.wgsl). The value itself:
// kernels/norm_value.wgsl.

struct Params {
  off: vec4<u32>,
  n_o: u32,   // outer indices in this launch
  n_r: u32,   // rows of the axis in this launch
  n_i: u32,   // columns in this launch
  in_so: u32, // x and y stride between outer indices
  in_sr: u32, // x and y stride along the axis
  st_so: u32, // record stride between outer indices
  items: u32, // elements per invocation
}

// The floats of the record at at that KIND's formula reads, the others 0:
// loaded for every element, so only those.
fn record(at: u32) -> vec4<f32> {
  if (KIND == 3u) { return vec4<f32>(st_ld(at), 0.0, 0.0, 0.0); }
  if (KIND == 2u) {
    return vec4<f32>(st_ld(at), st_ld(at + 1u), st_ld(at + 2u), 0.0);
  }
  return vec4<f32>(st_ld(at), st_ld(at + 1u), 0.0, 0.0);
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let first = (wg_linear_group(wid, nwg) * 256u + li) * P.items;
  let per_o = P.n_r * P.n_i;
  let total = P.n_o * per_o;
  if (first >= total) { return; }
  var o = first / per_o;
  let rest = first - o * per_o;
  var r = rest / P.n_i;
  var i = rest - r * P.n_i;
  let cnt = min(P.items, total - first);
  for (var j = 0u; j < cnt; j++) {
    let e = o * P.in_so + r * P.in_sr + i;
    let at = 4u * (o * P.st_so + i);
    let v = norm_value(x_ld(e), record(at));
    var y = v.x;
    let u = v.y;
    if (AFFINE == 1u) { y = (y * p_ld(r)) * u; }
    if (AFFINE == 2u) { y = y + p_ld(r); }
    if (AFFINE == 3u) { y = (y * p_ld(2u * r)) * u + p_ld(2u * r + 1u); }
    y_st(e, y);
    i += 1u;
    if (i == P.n_i) {
      i = 0u;
      r += 1u;
      if (r == P.n_r) {
        r = 0u;
        o += 1u;
      }
    }
  }
}
