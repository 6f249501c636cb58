/*
 * rest_ui.h - the web portal's files under /ui/ (source in web/, built by
 * CMake into <build>/web/ui and installed to share/muster/ui).
 *
 * The files of one flat directory are read once at start (a rebuilt
 * portal needs a restart) and served from memory, so no request path ever
 * reaches the file system. Every answer carries a strict
 * Content-Security-Policy (default-src 'self'): no inline script or style,
 * no other origin, no framing.
 */
#ifndef MU_REST_UI_H
#define MU_REST_UI_H

#include <stdbool.h>

#include "rest.h"

/* Loads the files of `dir`. A missing or empty directory is not an error:
 * /ui/ then answers 404 saying so (and a warning is logged). */
void rest_ui_load(const char *dir);

/* True for "/ui" and everything below "/ui/". */
bool rest_ui_path(const char *path);

/* Answers a GET/HEAD of a portal path ("/ui" and "/ui/" are index.html);
 * returns 0 or a negative MU_E* with rq->err set, as a handler does. */
int rest_ui_serve(struct rest_req *rq);

#endif
