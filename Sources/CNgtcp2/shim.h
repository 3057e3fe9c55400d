// SPDX-License-Identifier: MIT
// The one place ngtcp2 and GnuTLS are imported. Function-like macros of
// ngtcp2 are not imported by Swift: static inline wrappers live here.
#pragma once
#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>
#include <ngtcp2/ngtcp2_crypto_gnutls.h>
#include <gnutls/gnutls.h>
#include <gnutls/crypto.h>
#include <gnutls/x509.h>
