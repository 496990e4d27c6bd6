// The output of softmax, log-softmax, LayerNorm or RMSNorm from the final
// records of kernels/norm_stats.wgsl (host: src/webgpu/norm.c). Each
// invocation writes items consecutive elements of a box of [outer, len,
// inner] (inner fastest), stepping its (o, r, i) index without dividing.
// Prelude consts: KIND as norm_stats; AFFINE 0: none, 1: times p[r]
// (scale), 2: plus p[r] (bias), 3: times p[2r] plus p[2r + 1] (scale and
// bias packed side by side by kernels/norm_pack.wgsl). The value itself:
// kernels/norm_value.wgsl. The elements are written by fn norm_write
// (kernels/norm_apply_st.wgsl element by element, norm_apply_words.wgsl
// by whole words of a 2-byte y) through norm_y and norm_next.

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

// The output at box index at = (o, r, i), input element e.
fn norm_y(e: u32, at: vec3<u32>) -> f32 {
  let v = norm_value(x_ld(e), record(4u * (at.x * P.st_so + at.z)));
  var y = v.x;
  let u = v.y;
  if (AFFINE == 1u) { y = (y * p_ld(at.y)) * u; }
  if (AFFINE == 2u) { y = y + p_ld(at.y); }
  if (AFFINE == 3u) { y = (y * p_ld(2u * at.y)) * u + p_ld(2u * at.y + 1u); }
  return y;
}

// The box index after at, without dividing.
fn norm_next(at: vec3<u32>) -> vec3<u32> {
  var n = at + vec3<u32>(0u, 0u, 1u);
  if (n.z == P.n_i) {
    n.z = 0u;
    n.y += 1u;
    if (n.y == P.n_r) {
      n.y = 0u;
      n.x += 1u;
    }
  }
  return n;
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let first = (wg_linear_group(wid, nwg) * 256u + li) * P.items;
  let per_o = P.n_r * P.n_i;
  let total = P.n_o * per_o;
  if (first >= total) { return; }
  let o = first / per_o;
  let rest = first - o * per_o;
  let r = rest / P.n_i;
  norm_write(first, min(P.items, total - first),
             vec3<u32>(o, r, rest - r * P.n_i));
}
