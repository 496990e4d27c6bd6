/* Writes the Python package's constants from include/wgc.h: pyops OUT.py
 * writes wgc/_consts.py with the version, every enum constant without its
 * WGC_ prefix (ROW_MAJOR, UNARY_GELU, ...), the op lists as name -> value
 * tables, and the size and field offsets of each struct the package mirrors
 * with ctypes. The op constants come from the X-macro lists, as
 * tools/jsops.c does for JavaScript; every value is the compiler's, so the
 * package cannot drift from what C validates, and the layouts let it refuse
 * to load where its ctypes structs differ from the C ones. */
#include "op_lists.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

typedef struct py_const {
  const char *name;
  long value;
} py_const;

#define PY_STATUS_(name, msg) {#name, WGC_##name},
static const py_const statuses[] = {WGC_STATUS_MAP(PY_STATUS_)};

/* The enums that have no X-macro list: the names are written here, but a
 * misspelt one fails to compile and the values are the compiler's. */
#define C_(NAME) {#NAME, WGC_##NAME},
static const py_const enums[] = {
    C_(BACKEND_AUTO) C_(BACKEND_WEBGPU) C_(BACKEND_CPU) C_(POWER_DEFAULT)
        C_(POWER_LOW) C_(POWER_HIGH) C_(NO_TRANS) C_(TRANS) C_(CONJ_TRANS)
            C_(COL_MAJOR) C_(ROW_MAJOR) C_(ACTIVATION_NONE) C_(ACTIVATION_RELU)
                C_(ACTIVATION_GELU) C_(ACTIVATION_GELU_TANH) C_(ACTIVATION_SILU)
                    C_(BIAS_PER_COLUMN) C_(BIAS_PER_ROW) C_(POOL_MAX)
                        C_(POOL_AVG) C_(CAUSAL_NONE) C_(CAUSAL_TOP_LEFT)
                            C_(CAUSAL_BOTTOM_RIGHT) C_(ROTARY_BSHD)
                                C_(ROTARY_BHSD) C_(TIME_CPU)
                                    C_(TIME_SUBMIT_TO_DONE) C_(TIME_GPU)};
#define COUNT_(a) ((int)(sizeof a / sizeof *a))

typedef struct py_field {
  const char *name;
  size_t offset;
} py_field;

#define F_(T, f) {#f, offsetof(T, f)},
#define STRUCT_(PYNAME, T, ...)                                                \
  {                                                                            \
    PYNAME, sizeof(T), (const py_field[]){__VA_ARGS__},                        \
        COUNT_(((py_field[]){__VA_ARGS__}))                                    \
  }

typedef struct py_struct {
  const char *name; /* the Python class */
  size_t size;
  const py_field *fields;
  int count;
} py_struct;

static const py_struct structs[] = {
    STRUCT_("Options", wgc_options,
            F_(wgc_options, backend) F_(wgc_options, power)
                F_(wgc_options, cpu_threads) F_(wgc_options, max_binding_bytes)
                    F_(wgc_options, profile) F_(wgc_options, pipeline_cache)),
    STRUCT_("ProfileRecord", wgc_profile_record,
            F_(wgc_profile_record, name) F_(wgc_profile_record, shape)
                F_(wgc_profile_record, launches) F_(wgc_profile_record, source)
                    F_(wgc_profile_record, start_us)
                        F_(wgc_profile_record, duration_us)),
    STRUCT_("GemmEpilogue", wgc_gemm_epilogue,
            F_(wgc_gemm_epilogue, bias) F_(wgc_gemm_epilogue, bias_kind)
                F_(wgc_gemm_epilogue, activation) F_(wgc_gemm_epilogue, a_type)
                    F_(wgc_gemm_epilogue, b_type) F_(wgc_gemm_epilogue, c_type)
                        F_(wgc_gemm_epilogue, bias_type)),
    STRUCT_(
        "Conv2dDesc", wgc_conv2d_desc,
        F_(wgc_conv2d_desc, n) F_(wgc_conv2d_desc, c) F_(wgc_conv2d_desc, h) F_(
            wgc_conv2d_desc, w) F_(wgc_conv2d_desc, k) F_(wgc_conv2d_desc, r)
            F_(wgc_conv2d_desc, s) F_(wgc_conv2d_desc, stride_h)
                F_(wgc_conv2d_desc, stride_w) F_(wgc_conv2d_desc, pad_h) F_(
                    wgc_conv2d_desc, pad_w) F_(wgc_conv2d_desc, dilation_h)
                    F_(wgc_conv2d_desc, dilation_w) F_(wgc_conv2d_desc, groups)
                        F_(wgc_conv2d_desc, input_type)
                            F_(wgc_conv2d_desc, filter_type)
                                F_(wgc_conv2d_desc, bias_type)
                                    F_(wgc_conv2d_desc, output_type)),
    STRUCT_(
        "Pool2dDesc", wgc_pool2d_desc,
        F_(wgc_pool2d_desc, n) F_(wgc_pool2d_desc, c) F_(wgc_pool2d_desc, h)
            F_(wgc_pool2d_desc, w) F_(wgc_pool2d_desc, r) F_(wgc_pool2d_desc, s)
                F_(wgc_pool2d_desc, stride_h) F_(wgc_pool2d_desc, stride_w)
                    F_(wgc_pool2d_desc, pad_h) F_(wgc_pool2d_desc, pad_w)
                        F_(wgc_pool2d_desc, dilation_h)
                            F_(wgc_pool2d_desc, dilation_w)
                                F_(wgc_pool2d_desc, mode)
                                    F_(wgc_pool2d_desc, count_include_pad)
                                        F_(wgc_pool2d_desc, input_type)
                                            F_(wgc_pool2d_desc, output_type)),
    STRUCT_("AttentionStrides", wgc_attention_strides,
            F_(wgc_attention_strides, batch) F_(wgc_attention_strides, head)
                F_(wgc_attention_strides, seq)),
    STRUCT_(
        "AttentionDesc", wgc_attention_desc,
        F_(wgc_attention_desc, batch) F_(wgc_attention_desc, heads)
            F_(wgc_attention_desc, heads_kv) F_(wgc_attention_desc, seq_q) F_(
                wgc_attention_desc, seq_kv) F_(wgc_attention_desc, head_dim)
                F_(wgc_attention_desc, scale) F_(wgc_attention_desc, causal) F_(
                    wgc_attention_desc, head_dim_v)
                    F_(wgc_attention_desc, softcap) F_(wgc_attention_desc, mask)
                        F_(wgc_attention_desc,
                           mask_stride) F_(wgc_attention_desc, q_stride)
                            F_(wgc_attention_desc,
                               k_stride) F_(wgc_attention_desc, v_stride)
                                F_(wgc_attention_desc,
                                   o_stride) F_(wgc_attention_desc, q_type)
                                    F_(wgc_attention_desc,
                                       k_type) F_(wgc_attention_desc, v_type)
                                        F_(wgc_attention_desc, o_type)
                                            F_(wgc_attention_desc, mask_type)),
    STRUCT_("RotaryDesc", wgc_rotary_desc,
            F_(wgc_rotary_desc, batch) F_(wgc_rotary_desc,
                                          seq) F_(wgc_rotary_desc, heads)
                F_(wgc_rotary_desc, head_dim) F_(wgc_rotary_desc, rotary_dim)
                    F_(wgc_rotary_desc, interleaved) F_(wgc_rotary_desc, layout)
                        F_(wgc_rotary_desc, max_positions)
                            F_(wgc_rotary_desc, input_type)
                                F_(wgc_rotary_desc, output_type)
                                    F_(wgc_rotary_desc, cache_type)),
};

static void write_table(FILE *out, const char *table, const op_constant *ops,
                        int count) {
  fprintf(out, "%s: dict[str, int] = {\n", table);
  for (int i = 0; i < count; i++)
    fprintf(out, "    \"%s\": %s,\n", ops[i].lower, ops[i].name);
  fprintf(out, "}\n");
}

static void write_py(FILE *out) {
  fputs("# Generated by tools/pyops.c from include/wgc.h: edit that.\n", out);
  fprintf(out, "VERSION = \"%d.%d.%d\"\n", WGC_VERSION_MAJOR, WGC_VERSION_MINOR,
          WGC_VERSION_PATCH);
  for (int i = 0; i < COUNT_(enums); i++)
    fprintf(out, "%s = %ld\n", enums[i].name, enums[i].value);
  const op_constant *lists[] = {reduce_ops, unary_ops, binary_ops, dtypes};
  const int counts[] = {WGC_REDUCE_OP_COUNT, WGC_UNARY_OP_COUNT,
                        WGC_BINARY_OP_COUNT, WGC_DTYPE_COUNT};
  for (int l = 0; l < 4; l++)
    for (int i = 0; i < counts[l]; i++)
      fprintf(out, "%s = %d\n", lists[l][i].name, lists[l][i].value);
  write_table(out, "REDUCE_OPS", reduce_ops, WGC_REDUCE_OP_COUNT);
  write_table(out, "UNARY_OPS", unary_ops, WGC_UNARY_OP_COUNT);
  write_table(out, "BINARY_OPS", binary_ops, WGC_BINARY_OP_COUNT);
  write_table(out, "DTYPES", dtypes, WGC_DTYPE_COUNT);
  /* status value -> its name without ERR_, as wgc_status_name gives it */
  fprintf(out, "STATUS_NAMES: dict[int, str] = {\n");
  for (int i = 0; i < COUNT_(statuses); i++)
    fprintf(out, "    %ld: \"%s\",\n", statuses[i].value,
            strncmp(statuses[i].name, "ERR_", 4) ? statuses[i].name
                                                 : statuses[i].name + 4);
  fprintf(out, "}\n");
  fprintf(out, "LAYOUTS: dict[str, tuple[int, dict[str, int]]] = {\n");
  for (int i = 0; i < COUNT_(structs); i++) {
    fprintf(out, "    \"%s\": (%zu, {", structs[i].name, structs[i].size);
    for (int f = 0; f < structs[i].count; f++)
      fprintf(out, "%s\"%s\": %zu", f ? ", " : "", structs[i].fields[f].name,
              structs[i].fields[f].offset);
    fprintf(out, "}),\n");
  }
  fprintf(out, "}\n");
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: pyops OUT.py\n");
    return 2;
  }
  FILE *out = fopen(argv[1], "w");
  if (!out) {
    perror(argv[1]);
    return 1;
  }
  write_py(out);
  int ok = !ferror(out);
  if (fclose(out) != 0)
    ok = 0;
  if (!ok) {
    /* A partial file must not survive: make would take it as up to date. */
    fprintf(stderr, "%s: write failed\n", argv[1]);
    remove(argv[1]);
    return 1;
  }
  return 0;
}
