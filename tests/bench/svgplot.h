/* SPDX-License-Identifier: MIT */
/*
 * A tiny SVG line chart for the benchmark tool: log-log axes, one line per
 * series, a legend. Enough to plot time against size per algorithm without
 * depending on a plotting package.
 */
#ifndef MMP_BENCH_SVGPLOT_H
#define MMP_BENCH_SVGPLOT_H

#include <stdio.h>

#define SVG_MAX_SERIES 32
#define SVG_MAX_POINTS 64

typedef struct svg_series_s {
  char name[32];
  int n;
  double x[SVG_MAX_POINTS];
  double y[SVG_MAX_POINTS];
} svg_series_t;

typedef struct svg_chart_s {
  const char *title;
  const char *xlabel;
  const char *ylabel;
  int nseries;
  svg_series_t s[SVG_MAX_SERIES];
} svg_chart_t;

/* Adds (x, y) to the series called `name`, creating it if needed. */
void svg_add(svg_chart_t *c, const char *name, double x, double y);

/* Writes the chart to `path`. Returns 0 or -1 (errno set). */
int svg_write(const svg_chart_t *c, const char *path);

#endif /* MMP_BENCH_SVGPLOT_H */
