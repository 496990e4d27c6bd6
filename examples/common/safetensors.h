/* A strict safetensors reader: the file's tensors as name, dtype, shape and
 * a pointer to their bytes, without copying them.
 *
 * The format: an 8-byte little-endian header size N, N bytes of JSON (an
 * object, possibly padded with trailing spaces), then the data area. The
 * JSON maps each tensor name to {"dtype", "shape", "data_offsets": [begin,
 * end]} (offsets relative to the data area) and may hold "__metadata__", an
 * object of string values. Checked here, as the format requires: N at most
 * ST_MAX_HEADER and inside the file; strict JSON (json.h); exactly those
 * three fields per tensor; a known dtype; rank at most ST_MAX_RANK; begin <=
 * end; end - begin == product(shape) * dtype size, computed without
 * overflow; tensors neither overlapping nor leaving holes, and covering the
 * data area to its end; names unique (json.h rejects duplicate keys) and
 * free of NUL. Anything else gives a nonzero status and a message naming
 * the file and, where there is one, the tensor; nothing is read outside the
 * given bytes.
 *
 * Tensor data follows the file's layout: little-endian, row-major, and
 * aligned only as the writer made it (copy it with memcpy or upload it;
 * do not cast it to a wider type). */
#ifndef WGC_EXAMPLES_SAFETENSORS_H
#define WGC_EXAMPLES_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

enum {
  ST_MAX_RANK = 8,
  ST_MAX_HEADER = 100000000 /* bytes, as the reference reader allows */
};

/* Every dtype of the format whose elements are whole bytes. */
typedef enum {
  ST_F64,
  ST_F32,
  ST_F16,
  ST_BF16,
  ST_F8_E5M2,
  ST_F8_E4M3,
  ST_F8_E8M0,
  ST_I64,
  ST_I32,
  ST_I16,
  ST_I8,
  ST_U64,
  ST_U32,
  ST_U16,
  ST_U8,
  ST_BOOL,
  ST_DTYPE_COUNT
} st_dtype;

typedef struct st_tensor {
  const char *name; /* NUL-terminated */
  st_dtype dtype;
  size_t rank;
  uint64_t shape[ST_MAX_RANK];
  const void *data; /* inside the file's bytes; see alignment above */
  uint64_t bytes;
} st_tensor;

typedef struct st_file st_file;

/* Opens and checks the file at path; natively its bytes are memory-mapped
 * (read-only) until st_close. */
int st_open(const char *path, st_file **out, char *err, size_t errlen);
/* The same over bytes the caller keeps alive and unchanged until st_close;
 * name is used in messages only. */
int st_open_memory(const void *data, size_t len, const char *name,
                   st_file **out, char *err, size_t errlen);
/* Tensors in data order (by offset). */
size_t st_count(const st_file *f);
const st_tensor *st_tensor_at(const st_file *f, size_t i);
/* NULL if absent. */
const st_tensor *st_find(const st_file *f, const char *name);
/* A "__metadata__" value; NULL if absent. */
const char *st_metadata(const st_file *f, const char *key);
/* The format's name of a dtype ("F32"), and its element size in bytes. */
const char *st_dtype_name(st_dtype t);
size_t st_dtype_size(st_dtype t);
void st_close(st_file *f);

#endif
