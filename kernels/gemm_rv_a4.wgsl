// For gemm_rv: A's rows are contiguous along k, and its offset, row and
// batch strides and k slices are multiples of 4 floats: each row's run of
// four k is one vec4; i counts vec4s from A's offset.
const A4 = true;
fn gemm_a4(i: u32) -> vec4<f32> { return a_ld4(i); }
