/* WGSL sources embedded at build time from the kernels folder. */
#ifndef WGC_KERNELS_H
#define WGC_KERNELS_H

#include <stddef.h>

typedef struct wgc_kernel_source {
  const char *name; /* file name without ".wgsl" */
  const char *text;
  size_t length;
} wgc_kernel_source;

/* Terminated by an entry whose name is NULL. */
extern const wgc_kernel_source wgc_kernels[];

/* The kernel named name, or NULL. */
const wgc_kernel_source *wgc_kernel_find(const char *name);

#endif
