// The additive mask of a fused attention launch (src/webgpu/attention.c
// binds it as the fifth operand, "mask"): score s of the key at element
// at of the mask binding. See attention_nomask.wgsl for calls without one.
fn attn_masked(s: f32, at: u32) -> f32 {
  return s + mask_ld(at);
}
