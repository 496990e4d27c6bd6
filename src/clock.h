/* The host's monotonic clock in microseconds, which timing records and the
 * GPU completions they wait for are stamped with (clock.c). */
#ifndef WGC_CLOCK_H
#define WGC_CLOCK_H

double wgc_now_us(void);

#endif
