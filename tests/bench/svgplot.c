/* SPDX-License-Identifier: MIT */
/*
 * The SVG writer behind minimp-bench --svg: positions on log10 scales,
 * decade grid lines, one polyline and marker set per series, a legend.
 */
#include "svgplot.h"

#include <math.h>
#include <string.h>

#define W 900
#define H 560
#define L 80  /* left margin */
#define R 200 /* right margin, for the legend */
#define T 50
#define B 60

static const char *const colors[] = {
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
    "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#000000", "#aa5500"};

void svg_add(svg_chart_t *c, const char *name, double x, double y) {
  int i;

  for (i = 0; i < c->nseries; i++)
    if (strcmp(c->s[i].name, name) == 0)
      break;
  if (i == c->nseries) {
    if (c->nseries == SVG_MAX_SERIES)
      return;
    c->nseries++;
    snprintf(c->s[i].name, sizeof(c->s[i].name), "%s", name);
    c->s[i].n = 0;
  }
  if (c->s[i].n < SVG_MAX_POINTS && x > 0 && y > 0) {
    c->s[i].x[c->s[i].n] = x;
    c->s[i].y[c->s[i].n] = y;
    c->s[i].n++;
  }
}

static double px(double v, double lo, double hi) {
  return L + (log10(v) - lo) / (hi - lo) * (W - L - R);
}

static double py(double v, double lo, double hi) {
  return H - B - (log10(v) - lo) / (hi - lo) * (H - T - B);
}

int svg_write(const svg_chart_t *c, const char *path) {
  double xlo = INFINITY, xhi = -INFINITY, ylo = INFINITY, yhi = -INFINITY, d;
  FILE *f = fopen(path, "w");
  int i, k;

  if (f == NULL)
    return -1;
  for (i = 0; i < c->nseries; i++)
    for (k = 0; k < c->s[i].n; k++) {
      xlo = fmin(xlo, log10(c->s[i].x[k]));
      xhi = fmax(xhi, log10(c->s[i].x[k]));
      ylo = fmin(ylo, log10(c->s[i].y[k]));
      yhi = fmax(yhi, log10(c->s[i].y[k]));
    }
  if (xlo > xhi)
    xlo = 0, xhi = 1, ylo = 0, yhi = 1;
  xlo = floor(xlo), xhi = ceil(xhi) > xlo ? ceil(xhi) : xlo + 1;
  ylo = floor(ylo), yhi = ceil(yhi) > ylo ? ceil(yhi) : ylo + 1;
  fprintf(f,
          "<svg xmlns='http://www.w3.org/2000/svg' width='%d' height='%d' "
          "font-family='sans-serif' font-size='12'>\n"
          "<rect width='100%%' height='100%%' fill='white'/>\n"
          "<text x='%d' y='25' font-size='15'>%s</text>\n",
          W, H, L, c->title);
  for (d = xlo; d <= xhi; d++)
    fprintf(f,
            "<line x1='%.1f' y1='%d' x2='%.1f' y2='%d' stroke='#ddd'/>"
            "<text x='%.1f' y='%d' text-anchor='middle'>1e%.0f</text>\n",
            px(pow(10, d), xlo, xhi), T, px(pow(10, d), xlo, xhi), H - B,
            px(pow(10, d), xlo, xhi), H - B + 18, d);
  for (d = ylo; d <= yhi; d++)
    fprintf(f,
            "<line x1='%d' y1='%.1f' x2='%d' y2='%.1f' stroke='#ddd'/>"
            "<text x='%d' y='%.1f' text-anchor='end'>1e%.0f</text>\n",
            L, py(pow(10, d), ylo, yhi), W - R, py(pow(10, d), ylo, yhi), L - 6,
            py(pow(10, d), ylo, yhi) + 4, d);
  fprintf(f,
          "<rect x='%d' y='%d' width='%d' height='%d' fill='none' "
          "stroke='black'/>\n"
          "<text x='%d' y='%d' text-anchor='middle'>%s</text>\n"
          "<text x='20' y='%d' transform='rotate(-90 20 %d)' "
          "text-anchor='middle'>%s</text>\n",
          L, T, W - L - R, H - T - B, (L + W - R) / 2, H - 15, c->xlabel,
          (T + H - B) / 2, (T + H - B) / 2, c->ylabel);
  for (i = 0; i < c->nseries; i++) {
    const char *col = colors[i % (int)(sizeof(colors) / sizeof(*colors))];
    fprintf(f, "<polyline fill='none' stroke='%s' stroke-width='2' points='",
            col);
    for (k = 0; k < c->s[i].n; k++)
      fprintf(f, "%.1f,%.1f ", px(c->s[i].x[k], xlo, xhi),
              py(c->s[i].y[k], ylo, yhi));
    fprintf(f, "'/>\n");
    for (k = 0; k < c->s[i].n; k++)
      fprintf(f, "<circle cx='%.1f' cy='%.1f' r='3' fill='%s'/>\n",
              px(c->s[i].x[k], xlo, xhi), py(c->s[i].y[k], ylo, yhi), col);
    fprintf(f,
            "<line x1='%d' y1='%d' x2='%d' y2='%d' stroke='%s' "
            "stroke-width='3'/><text x='%d' y='%d'>%s</text>\n",
            W - R + 15, T + 10 + i * 20, W - R + 40, T + 10 + i * 20, col,
            W - R + 46, T + 14 + i * 20, c->s[i].name);
  }
  fprintf(f, "</svg>\n");
  return fclose(f) == 0 ? 0 : -1;
}
