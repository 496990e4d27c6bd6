// One output element of softmax, log-softmax, LayerNorm or RMSNorm, before
// its scale and bias, from x and its row's final record st
// (kernels/norm_fold.wgsl): (y, u), u y's unit, 1 unless norm_scaled
// rescued a flushed product. For norm_apply.wgsl and norm_row.wgsl; needs
// KIND and AFFINE (0 or 2: no scale).

// A normalised value num * inv and its unit: where a device that flushes
// subnormals zeroed it (|num * inv| below FLT_MIN, num not 0), the same
// product 2^64 times larger and 2^-64, so that an infinite scale still
// gives +-inf, as the formula does, rather than 0 * inf = NaN (a finite
// one gives what it did: the product times 2^-64 underflows again).
fn norm_scaled(num: f32, inv: f32) -> vec2<f32> {
  let y = num * inv;
  if (AFFINE == 0u || AFFINE == 2u) { return vec2<f32>(y, 1.0); } // no scale
  return select(vec2<f32>(y, 1.0), vec2<f32>((num * 0x1p64) * inv, 0x1p-64),
                y == 0.0 && num != 0.0);
}

fn norm_value(x: f32, st: vec4<f32>) -> vec2<f32> {
  if (KIND == 0u) { return vec2<f32>(wgc_exp(x - st.x) / st.y, 1.0); }
  if (KIND == 1u) { return vec2<f32>((x - st.x) - st.y, 1.0); }
  if (KIND == 2u) { return norm_scaled((x - st.x) - st.y, st.z); }
  return norm_scaled(x, st.x);
}
