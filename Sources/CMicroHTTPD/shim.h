#ifndef CMICROHTTPD_SHIM_H
#define CMICROHTTPD_SHIM_H
/* microhttpd.h expects these to be included first. */
#include <stdarg.h>
#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <sys/select.h>
#include <microhttpd.h>
#endif
