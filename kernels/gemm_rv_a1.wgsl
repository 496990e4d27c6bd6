// For gemm_rv: A is read one float at a time (any strides and offset);
// gemm_a4 only has to exist, A4 keeps it from being called.
const A4 = false;
fn gemm_a4(i: u32) -> vec4<f32> { return vec4<f32>(0.0f); }
