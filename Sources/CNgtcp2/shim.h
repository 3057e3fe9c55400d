// SPDX-License-Identifier: MIT
// The one place ngtcp2 and GnuTLS are imported. Function-like macros of
// ngtcp2 and GnuTLS are not imported by Swift: static inline wrappers live here.
// Every wrapper passes the version constant of the *installed* headers
// (ngtcp2 1.11: settings v2, callbacks v1, transport params v1, pkt info v1,
// conn info v1), so the library never sees a version it does not know.
#pragma once
#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>
#include <ngtcp2/ngtcp2_crypto_gnutls.h>
#include <gnutls/gnutls.h>
#include <gnutls/crypto.h>
#include <gnutls/x509.h>
#include <gnutls/abstract.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <string.h>
// Linux event-loop primitives (not part of Swift's Glibc module).
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>

// MARK: - ngtcp2 function-like macros

static inline void moq_ngtcp2_settings_default(ngtcp2_settings *settings) {
    ngtcp2_settings_default(settings);
}

static inline void moq_ngtcp2_transport_params_default(ngtcp2_transport_params *params) {
    ngtcp2_transport_params_default(params);
}

static inline int moq_ngtcp2_conn_client_new(
    ngtcp2_conn **pconn, const ngtcp2_cid *dcid, const ngtcp2_cid *scid, const ngtcp2_path *path,
    uint32_t version, const ngtcp2_callbacks *callbacks, const ngtcp2_settings *settings,
    const ngtcp2_transport_params *params, void *user_data) {
    return ngtcp2_conn_client_new(pconn, dcid, scid, path, version, callbacks, settings, params, NULL,
                                  user_data);
}

static inline int moq_ngtcp2_conn_server_new(
    ngtcp2_conn **pconn, const ngtcp2_cid *dcid, const ngtcp2_cid *scid, const ngtcp2_path *path,
    uint32_t version, const ngtcp2_callbacks *callbacks, const ngtcp2_settings *settings,
    const ngtcp2_transport_params *params, void *user_data) {
    return ngtcp2_conn_server_new(pconn, dcid, scid, path, version, callbacks, settings, params, NULL,
                                  user_data);
}

static inline int moq_ngtcp2_conn_read_pkt(ngtcp2_conn *conn, const ngtcp2_path *path,
                                           const uint8_t *pkt, size_t pktlen, ngtcp2_tstamp ts) {
    ngtcp2_pkt_info pi = {0};
    return ngtcp2_conn_read_pkt(conn, path, &pi, pkt, pktlen, ts);
}

static inline ngtcp2_ssize moq_ngtcp2_conn_writev_stream(
    ngtcp2_conn *conn, ngtcp2_path *path, uint8_t *dest, size_t destlen, ngtcp2_ssize *pdatalen,
    uint32_t flags, int64_t stream_id, const ngtcp2_vec *datav, size_t datavcnt, ngtcp2_tstamp ts) {
    return ngtcp2_conn_writev_stream(conn, path, NULL, dest, destlen, pdatalen, flags, stream_id, datav,
                                     datavcnt, ts);
}

static inline ngtcp2_ssize moq_ngtcp2_conn_writev_datagram(
    ngtcp2_conn *conn, ngtcp2_path *path, uint8_t *dest, size_t destlen, int *paccepted,
    uint32_t flags, uint64_t dgram_id, const ngtcp2_vec *datav, size_t datavcnt, ngtcp2_tstamp ts) {
    return ngtcp2_conn_writev_datagram(conn, path, NULL, dest, destlen, paccepted, flags, dgram_id,
                                       datav, datavcnt, ts);
}

static inline ngtcp2_ssize moq_ngtcp2_conn_write_connection_close(
    ngtcp2_conn *conn, ngtcp2_path *path, uint8_t *dest, size_t destlen, const ngtcp2_ccerr *ccerr,
    ngtcp2_tstamp ts) {
    return ngtcp2_conn_write_connection_close(conn, path, NULL, dest, destlen, ccerr, ts);
}

static inline void moq_ngtcp2_conn_get_conn_info(ngtcp2_conn *conn, ngtcp2_conn_info *cinfo) {
    ngtcp2_conn_get_conn_info(conn, cinfo);
}

// MARK: - GnuTLS function-like macros

static inline unsigned int moq_gnutls_curve_to_bits(gnutls_ecc_curve_t curve) {
    return GNUTLS_CURVE_TO_BITS(curve);
}

// MARK: - sockaddr views (Swift cannot alias sockaddr_storage as sockaddr without rebinding)

static inline const struct sockaddr *moq_sockaddr(const struct sockaddr_storage *ss) {
    return (const struct sockaddr *)ss;
}

static inline struct sockaddr *moq_sockaddr_mut(struct sockaddr_storage *ss) {
    return (struct sockaddr *)ss;
}

// MARK: - UDP segmentation offload (CMSG_* are macros)
//
// GSO: one sendmsg carries up to 64 datagrams of `segment` bytes each (the last may be shorter),
// so the kernel walks its UDP/IP path once per batch instead of once per packet. GRO: the kernel
// hands a run of datagrams from one peer to one recvmsg, with their size in a control message.

#ifndef SOL_UDP
#define SOL_UDP 17
#endif
#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif

/// Sends `len` bytes as datagrams of `segment` bytes (0: one datagram). `to` may be NULL (connected socket).
static inline ssize_t moq_udp_send(int fd, const void *buf, size_t len, const struct sockaddr *to,
                                   socklen_t tolen, uint16_t segment) {
    struct iovec iov = {(void *)buf, len};
    struct msghdr msg = {0};
    union {
        char buf[CMSG_SPACE(sizeof(uint16_t))];
        struct cmsghdr align;
    } control;
    msg.msg_name = (void *)to;
    msg.msg_namelen = to ? tolen : 0;
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    if (segment > 0 && len > segment) {
        memset(&control, 0, sizeof control);
        msg.msg_control = control.buf;
        msg.msg_controllen = sizeof control.buf;
        struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
        cm->cmsg_level = SOL_UDP;
        cm->cmsg_type = UDP_SEGMENT;
        cm->cmsg_len = CMSG_LEN(sizeof(uint16_t));
        memcpy(CMSG_DATA(cm), &segment, sizeof segment);
    }
    return sendmsg(fd, &msg, 0);
}

/// Receives into `buf`; `*segment` is the size of each coalesced datagram when GRO joined several
/// (the last may be shorter), else 0.
static inline ssize_t moq_udp_recv(int fd, void *buf, size_t len, struct sockaddr_storage *from,
                                   socklen_t *fromlen, int *segment) {
    struct iovec iov = {buf, len};
    struct msghdr msg = {0};
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } control;
    msg.msg_name = from;
    msg.msg_namelen = *fromlen;
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.buf;
    msg.msg_controllen = sizeof control.buf;
    *segment = 0;
    ssize_t n = recvmsg(fd, &msg, 0);
    if (n < 0) return n;
    *fromlen = msg.msg_namelen;
    for (struct cmsghdr *cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
        if (cm->cmsg_level == SOL_UDP && cm->cmsg_type == UDP_GRO) {
            memcpy(segment, CMSG_DATA(cm), sizeof(int));
        }
    }
    return n;
}

// MARK: - GnuTLS memory (gnutls_free is a macro that also assigns NULL)

static inline void moq_gnutls_free(void *p) {
    gnutls_free(p);
}

// MARK: - Thread name (prctl is variadic, which Swift cannot call)
#include <sys/prctl.h>

static inline void moq_set_thread_name(const char *name) {
    prctl(PR_SET_NAME, name, 0, 0, 0);
}
