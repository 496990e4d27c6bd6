// For gemm_rv: B is read one float at a time (any strides and offset);
// gemm_b4 and gemm_bk only have to exist, B4 and BK keep them from being
// called.
const B4 = false;
fn gemm_b4(i: u32) -> vec4<f32> { return vec4<f32>(0.0f); }
const BK = false;
fn gemm_bk(p: u32) -> vec4<f32> { return vec4<f32>(0.0f); }
