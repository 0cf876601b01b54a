/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* JSON string output for the JSON and HTML writers. */
#ifndef ASYNCBPF_JSON_H
#define ASYNCBPF_JSON_H

#include <stdio.h>

/* Writes s as a quoted JSON string: invalid UTF-8 becomes U+FFFD, and '<', '>', '&' are
 * escaped so that the text is also safe inside an HTML <script> element. */
void json_string(FILE *f, const char *s);

#endif
