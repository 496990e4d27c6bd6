// For gemm_rv: B's column groups are whole vec4s of it (B's columns are
// contiguous, and its offset, row and batch strides and n are multiples of
// 4 floats), read one vec4 each; i counts vec4s from B's offset (gemm_bk
// only has to exist).
const B4 = true;
fn gemm_b4(i: u32) -> vec4<f32> { return b_ld4(i); }
const BK = false;
fn gemm_bk(p: u32) -> vec4<f32> { return vec4<f32>(0.0f); }
