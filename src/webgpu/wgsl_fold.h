/* Folds the `if` statements of generated WGSL whose conditions read only
 * constants of literal value, as the preludes declare them
 * (`const TM: u32 = 4u;`), so that the shader compiler never parses the
 * blocks it would throw away. */
#ifndef WGC_WEBGPU_WGSL_FOLD_H
#define WGC_WEBGPU_WGSL_FOLD_H

#include <stddef.h>

/* Folds src[0, len) (WGSL one statement or brace a line, as the embedded
 * kernels are) into out, which holds len + 1 bytes; returns the length
 * written (out is NUL-terminated). A statement `if (c) {` whose c is made
 * of such constants, integer and boolean literals, comparisons, !, && and
 * || becomes the block `{` of the branch taken (nothing where none is);
 * every other line is copied as it is. */
size_t wg_wgsl_fold(const char *src, size_t len, char *out);

#endif
