/* The host clock that timing records and their completions share. */
#include "clock.h"

#include <time.h>

double wgc_now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}
