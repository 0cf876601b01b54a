// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <math.h>
#include <stdio.h>

#include "bench/svgplot.h"

/* the page and its margins, in pixels */
#define W 640.0
#define H 400.0
#define L 70.0
#define R 130.0
#define T 30.0
#define B 50.0

struct scale {
	double xmax, lo, hi; /* lo and hi: powers of ten around the values */
};

static double px(const struct scale *s, double v)
{
	return L + v / s->xmax * (W - L - R);
}

static double py(const struct scale *s, double v)
{
	return H - B - (log10(v) - log10(s->lo)) / (log10(s->hi) - log10(s->lo)) * (H - T - B);
}

static void text(FILE *f, const char *s)
{
	for (; *s; s++)
		if (*s == '<')
			fputs("&lt;", f);
		else if (*s == '>')
			fputs("&gt;", f);
		else if (*s == '&')
			fputs("&amp;", f);
		else
			fputc(*s, f);
}

static void series(FILE *f, const struct svgplot *p, const struct scale *s, int r)
{
	const struct svgplot_series *sr = &p->series[r];

	fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", sr->color);
	for (int i = 0; i < p->nx; i++)
		if (sr->y[i] > 0)
			fprintf(f, "%.1f,%.1f ", px(s, p->x[i]), py(s, sr->y[i]));
	fprintf(f, "\"/>\n");
	for (int i = 0; i < p->nx; i++)
		if (sr->y[i] > 0)
			fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>\n",
				px(s, p->x[i]), py(s, sr->y[i]), sr->color);
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" fill=\"%s\">", W - R + 10, T + 20 + 18 * r,
		sr->color);
	text(f, sr->name);
	fprintf(f, "</text>\n");
}

int svgplot_write(const char *path, const struct svgplot *p)
{
	struct scale s = { .xmax = p->nx ? p->x[p->nx - 1] : 1, .lo = INFINITY, .hi = 0 };
	FILE *f;

	for (int r = 0; r < p->nseries; r++)
		for (int i = 0; i < p->nx; i++)
			if (p->series[r].y[i] > 0) {
				s.lo = fmin(s.lo, p->series[r].y[i]);
				s.hi = fmax(s.hi, p->series[r].y[i]);
			}
	if (s.hi <= 0)
		return 1;
	s.lo = pow(10, floor(log10(s.lo)));
	s.hi = pow(10, ceil(log10(s.hi)));
	if (s.hi <= s.lo)
		s.hi = s.lo * 10;
	f = fopen(path, "w");
	if (!f)
		return -1;
	fprintf(f,
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
		"font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%%\" "
		"height=\"100%%\" fill=\"white\"/>\n<text x=\"%.0f\" y=\"18\">",
		W, H, L);
	text(f, p->title);
	fprintf(f, "</text>\n");
	/* the 1.001: a power of ten computed by repeated products may miss hi by a hair */
	for (double v = s.lo; v <= s.hi * 1.001; v *= 10) {
		fprintf(f,
			"<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
			"<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%g ",
			L, W - R, py(&s, v), py(&s, v), L - 6, py(&s, v) + 4, v / p->yscale);
		text(f, p->yunit);
		fprintf(f, "</text>\n");
	}
	for (int i = 0; i < p->nx; i++)
		fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%d</text>\n",
			px(&s, p->x[i]), H - B + 18, p->x[i]);
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", (L + W - R) / 2, H - 12);
	text(f, p->xlabel);
	fprintf(f, "</text>\n");
	fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"black\"/>\n", L,
		W - R, H - B, H - B);
	fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"black\"/>\n", L,
		L, T, H - B);
	for (int r = 0; r < p->nseries; r++)
		series(f, p, &s, r);
	fprintf(f, "</svg>\n");
	return fclose(f) ? -1 : 0;
}
