// The identity for map.wgsl: a copy within one buffer, which WebGPU's
// buffer copy cannot do.
fn apply(x: f32) -> f32 { return x; }
