/* minilm_model_load_dir: the model's folder read from the file system
 * (natively; the browser fetches the same files and calls the memory
 * forms). */
#include "minilm_model.h"
#include "read_file.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int minilm_model_load_dir(minilm_model *m, wgc_context *ctx, const char *dir,
                          wgc_dtype wtype, char *err, size_t errlen) {
  char path[4096];
  minilm_config cfg = minilm_config_default();
  static const char *const configs[2] = {"config.json",
                                         "sentence_bert_config.json"};
  for (int i = 0; i < 2; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, configs[i]);
    size_t len = 0;
    char *text = read_file(path, (size_t)1 << 24, &len, err, errlen);
    if (!text)
      return 1;
    int bad = i == 0
                  ? minilm_config_parse(&cfg, text, len, path, err, errlen)
                  : minilm_seq_config_parse(&cfg, text, len, path, err, errlen);
    free(text);
    if (bad)
      return 1;
  }
  snprintf(path, sizeof path, "%s/model.safetensors", dir);
  st_file *f;
  if (st_open(path, &f, err, errlen))
    return 1;
  int bad = minilm_model_load(m, ctx, &cfg, f, path, wtype, err, errlen);
  st_close(f);
  return bad;
}
