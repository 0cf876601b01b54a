/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* A line plot with a log-scale y axis, as a plain SVG file: a few series over the same
 * integer x values, each in its colour and named in a legend. */
#ifndef ASYNCBPF_SVGPLOT_H
#define ASYNCBPF_SVGPLOT_H

struct svgplot_series {
	const char *name, *color; /* color: any SVG colour, "#1f77b4" */
	const double *y;	  /* one per x; a value that is not > 0 is not drawn */
};

struct svgplot {
	const char *title, *xlabel;
	const char *yunit; /* after each y tick's value, which is y / yscale */
	double yscale;
	const int *x; /* ascending, > 0; the x axis runs from 0 to the last */
	int nx;
	const struct svgplot_series *series;
	int nseries;
};

/* Writes the plot to path: 0; 1 when no value can be drawn (nothing is written); -1 with
 * errno when the file cannot be written. */
int svgplot_write(const char *path, const struct svgplot *p);

#endif
