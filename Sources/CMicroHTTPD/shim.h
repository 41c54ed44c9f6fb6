#ifndef CMICROHTTPD_SHIM_H
#define CMICROHTTPD_SHIM_H
/* microhttpd.h expects these to be included first. */
#include <stdarg.h>
#include <stdint.h>
#include <stddef.h>
#include <string.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <sys/select.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <microhttpd.h>

/* MHD_get_daemon_info and MHD_get_connection_info are variadic, which Swift does not import: typed wrappers. */

/** The port the daemon is bound to (useful after binding port 0), or 0 when unknown. */
static inline uint16_t cmhd_daemon_bound_port(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info == NULL ? 0 : info->port;
}

/**
 * The client's IP address as text ("192.0.2.1", "2001:db8::1") into `buffer`; returns 0 on success, -1 when the
 * address is unknown or not IPv4/IPv6.
 */
static inline int cmhd_sockaddr_text(const struct sockaddr *address, char *buffer, socklen_t length) {
    if (address == NULL || length == 0) return -1;
    if (address->sa_family == AF_INET) {
        const struct sockaddr_in *v4 = (const struct sockaddr_in *)(const void *)address;
        return inet_ntop(AF_INET, &v4->sin_addr, buffer, length) == NULL ? -1 : 0;
    }
    if (address->sa_family == AF_INET6) {
        const struct sockaddr_in6 *v6 = (const struct sockaddr_in6 *)(const void *)address;
        return inet_ntop(AF_INET6, &v6->sin6_addr, buffer, length) == NULL ? -1 : 0;
    }
    return -1;
}

/** The client's IP address of `connection` as `cmhd_sockaddr_text` writes it. */
static inline int cmhd_client_address(struct MHD_Connection *connection, char *buffer, socklen_t length) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (info == NULL) return -1;
    return cmhd_sockaddr_text(info->client_addr, buffer, length);
}

/** The socket context set by the MHD_OPTION_NOTIFY_CONNECTION callback for `connection`, or NULL. */
static inline void *cmhd_connection_socket_context(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return info == NULL ? NULL : info->socket_context;
}

/** The socket of `connection`, or -1 when unknown. */
static inline int cmhd_connection_fd(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info == NULL ? -1 : info->connect_fd;
}

/**
 * The size in bytes of the request line and headers (up to and including the empty line) of the request being
 * processed on `connection`, or 0 before its headers were received.
 */
static inline size_t cmhd_request_header_size(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
    return info == NULL ? 0 : info->header_size;
}

#endif
