// For gemm_rv: a typed B (BK_TYPE: f16, bf16, Q8_0 or Q4_0) whose columns
// run along k (rs_b 1), read four k of a column at a time: gemm_bk(p) gives
// the elements p..p+3 (p a column's start plus a multiple of 4 k; for the
// 2-byte types an even element offset from the binding's start, which the
// host makes sure of), their words read once each and decoded as the
// element accessor does (dtype.wgsl), so the sums are the same bit for bit.
// Per element, gemm_rv_b1 would decode each one alone, a block's scale
// included.
const B4 = false;
const BK = true;
fn gemm_b4(i: u32) -> vec4<f32> { return vec4<f32>(0.0f); }

// Quant e (0..3) of the four from byte z on, z even: within word w0 where
// z starts a word, else its last two and the next word w1's first two.
fn bk_quant(w0: u32, w1: u32, al: bool, e: u32, high: bool) -> f32 {
  let w = select(w0, select(w0, w1, e >= 2u), al);
  let pos = select(e, (e + 2u) & 3u, al);
  if (BK_TYPE == T_Q8_0) { return dt_q8_in(w, pos); }
  return dt_q4_in(w, pos, high);
}

fn gemm_bk(p: u32) -> vec4<f32> {
  if (BK_TYPE == T_F16 || BK_TYPE == T_BF16) {
    let w = (P.off[1] + p) >> 1u;
    let w0 = b_w(w);
    let w1 = b_w(w + 1u);
    if (BK_TYPE == T_F16) {
      return bitcast<vec4<f32>>(vec4<u32>(dt_f16_in(w0, false),
                                          dt_f16_in(w0, true),
                                          dt_f16_in(w1, false),
                                          dt_f16_in(w1, true)));
    }
    return bitcast<vec4<f32>>(vec4<u32>(dt_bf16_in(w0, false),
                                        dt_bf16_in(w0, true),
                                        dt_bf16_in(w1, false),
                                        dt_bf16_in(w1, true)));
  }
  let q8 = BK_TYPE == T_Q8_0;
  let y = P.off[1] + (p >> 5u) * select(18u, 34u, q8);
  let j = p & 31u;
  let d = dt_f16_in(b_w(y >> 2u), (y & 2u) != 0u);
  // Q4_0: elements j.. are the low nibbles of bytes j.., or from 16 on
  // the high nibbles of bytes j - 16..
  let z = y + 2u + select(j & 15u, j, q8);
  let al = (z & 2u) != 0u;
  let w0 = b_w(z >> 2u);
  let w1 = b_w((z >> 2u) + select(0u, 1u, al)); // the next word if needed
  let high = j >= 16u;
  return vec4<f32>(bitcast<f32>(dt_block_of(d, bk_quant(w0, w1, al, 0u, high))),
                   bitcast<f32>(dt_block_of(d, bk_quant(w0, w1, al, 1u, high))),
                   bitcast<f32>(dt_block_of(d, bk_quant(w0, w1, al, 2u, high))),
                   bitcast<f32>(dt_block_of(d, bk_quant(w0, w1, al, 3u, high))));
}
