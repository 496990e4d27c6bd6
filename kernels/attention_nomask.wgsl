// attention_mask.wgsl for calls without a mask: scores stay as they are
// and nothing is read.
fn attn_masked(s: f32, at: u32) -> f32 {
  return s;
}
