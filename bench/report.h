/* The report: reads the parts' record files, sets each figure beside its
 * baselines, prints the table and writes the JSON. */
#ifndef BENCH_REPORT_H
#define BENCH_REPORT_H

int report_write(const char *const *files, int count, const char *json_path);

#endif
