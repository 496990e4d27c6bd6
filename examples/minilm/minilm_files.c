/* minilm_model_load_dir: the model's folder read from the file system
 * (natively; the browser fetches the same files and calls the memory
 * forms). */
#include "minilm_model.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Reads a whole small file (a config); NULL with a message on failure. */
static char *read_text(const char *path, size_t *len, char *err,
                       size_t errlen) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    snprintf(err, errlen, "%s: %s", path, strerror(errno));
    return NULL;
  }
  char *buf = NULL;
  size_t cap = 0, n = 0;
  for (;;) {
    if (n == cap) {
      if (cap >= (1u << 24)) {
        snprintf(err, errlen, "%s: larger than a config file can be", path);
        break;
      }
      cap = cap ? 2 * cap : 4096;
      char *b = realloc(buf, cap);
      if (!b) {
        snprintf(err, errlen, "%s: out of memory", path);
        break;
      }
      buf = b;
    }
    size_t got = fread(buf + n, 1, cap - n, f);
    n += got;
    if (got == 0) {
      if (ferror(f))
        snprintf(err, errlen, "%s: read error", path);
      else {
        fclose(f);
        *len = n;
        return buf;
      }
      break;
    }
  }
  fclose(f);
  free(buf);
  return NULL;
}

int minilm_model_load_dir(minilm_model *m, wgc_context *ctx, const char *dir,
                          char *err, size_t errlen) {
  char path[4096];
  minilm_config cfg = minilm_config_default();
  static const char *const configs[2] = {"config.json",
                                         "sentence_bert_config.json"};
  for (int i = 0; i < 2; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, configs[i]);
    size_t len = 0;
    char *text = read_text(path, &len, err, errlen);
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
  int bad = minilm_model_load(m, ctx, &cfg, f, path, err, errlen);
  st_close(f);
  return bad;
}
