// SPDX-License-Identifier: MIT
// System-library shim for pkg-config module gstreamer-1.0. Function-like macros are
// not imported into Swift: the few the elements need are wrapped here.
#pragma once
#include <gst/gst.h>

static inline GType swiftmoq_type_string(void) { return G_TYPE_STRING; }
static inline GType swiftmoq_type_boolean(void) { return G_TYPE_BOOLEAN; }
static inline GType swiftmoq_type_uint(void) { return G_TYPE_UINT; }
static inline GType swiftmoq_type_int(void) { return G_TYPE_INT; }
static inline GType swiftmoq_type_uint64(void) { return G_TYPE_UINT64; }
static inline GType swiftmoq_type_int64(void) { return G_TYPE_INT64; }
static inline GType swiftmoq_type_double(void) { return G_TYPE_DOUBLE; }
static inline GType swiftmoq_type_structure(void) { return GST_TYPE_STRUCTURE; }
static inline GType swiftmoq_type_enum(void) { return G_TYPE_ENUM; }

static inline GstClockTime swiftmoq_buffer_pts(GstBuffer *b) { return GST_BUFFER_PTS(b); }
static inline GstClockTime swiftmoq_buffer_dts(GstBuffer *b) { return GST_BUFFER_DTS(b); }
static inline GstClockTime swiftmoq_buffer_duration(GstBuffer *b) { return GST_BUFFER_DURATION(b); }
static inline void swiftmoq_buffer_set_pts(GstBuffer *b, GstClockTime t) { GST_BUFFER_PTS(b) = t; }
static inline void swiftmoq_buffer_set_dts(GstBuffer *b, GstClockTime t) { GST_BUFFER_DTS(b) = t; }
static inline void swiftmoq_buffer_set_duration(GstBuffer *b, GstClockTime t) { GST_BUFFER_DURATION(b) = t; }
static inline gboolean swiftmoq_buffer_is_delta(GstBuffer *b) {
    return GST_BUFFER_FLAG_IS_SET(b, GST_BUFFER_FLAG_DELTA_UNIT);
}
static inline void swiftmoq_buffer_set_flags(GstBuffer *b, guint flags) { GST_BUFFER_FLAG_SET(b, flags); }
static inline gboolean swiftmoq_buffer_has_flag(GstBuffer *b, guint flag) { return GST_BUFFER_FLAG_IS_SET(b, flag); }
static inline GstEventType swiftmoq_event_type(GstEvent *e) { return GST_EVENT_TYPE(e); }
static inline GstQueryType swiftmoq_query_type(GstQuery *q) { return GST_QUERY_TYPE(q); }
static inline void swiftmoq_object_flag_set(gpointer obj, guint32 flag) { GST_OBJECT_FLAG_SET(obj, flag); }
static inline const gchar *swiftmoq_pad_name(GstPad *pad) { return GST_PAD_NAME(pad); }
static inline GstElement *swiftmoq_pad_parent_element(GstPad *pad) { return GST_PAD_PARENT(pad); }
static inline GstClockTime swiftmoq_clock_time_none(void) { return GST_CLOCK_TIME_NONE; }
static inline gboolean swiftmoq_clock_time_is_valid(GstClockTime t) { return GST_CLOCK_TIME_IS_VALID(t); }
static inline GstState swiftmoq_element_current_state(GstElement *e) { return GST_STATE(e); }
static inline GQuark swiftmoq_core_error_quark(void) { return GST_CORE_ERROR; }
static inline GQuark swiftmoq_resource_error_quark(void) { return GST_RESOURCE_ERROR; }
static inline GQuark swiftmoq_stream_error_quark(void) { return GST_STREAM_ERROR; }
static inline GQuark swiftmoq_library_error_quark(void) { return GST_LIBRARY_ERROR; }
static inline void swiftmoq_value_init(GValue *v, GType t) { g_value_init(v, t); }
static inline GstDebugLevel swiftmoq_debug_threshold(GstDebugCategory *c) { return gst_debug_category_get_threshold(c); }
static inline GstClockTime swiftmoq_element_base_time(GstElement *e) { return gst_element_get_base_time(e); }
static inline gboolean swiftmoq_pad_is_flushing(GstPad *pad) { return GST_PAD_IS_FLUSHING(pad); }
static inline GstState swiftmoq_element_target_state(GstElement *e) { return GST_STATE_TARGET(e); }

/* Whether a sink anywhere in `bin` (recursively) renders on the clock: its "sync" property is TRUE
 * (GstBaseSink's; a sink without it counts as syncing). */
static inline gboolean swiftmoq_bin_has_syncing_sink(GstBin *bin) {
    GstIterator *it = gst_bin_iterate_recurse(bin);
    GValue item = G_VALUE_INIT;
    gboolean found = FALSE, done = FALSE;
    while (!done && !found) {
        switch (gst_iterator_next(it, &item)) {
        case GST_ITERATOR_OK: {
            GstElement *element = GST_ELEMENT(g_value_get_object(&item));
            if (!GST_IS_BIN(element) && GST_OBJECT_FLAG_IS_SET(element, GST_ELEMENT_FLAG_SINK)) {
                gboolean sync = TRUE;
                if (g_object_class_find_property(G_OBJECT_GET_CLASS(element), "sync"))
                    g_object_get(element, "sync", &sync, NULL);
                found = sync;
            }
            g_value_reset(&item);
            break;
        }
        case GST_ITERATOR_RESYNC: gst_iterator_resync(it); break;
        default: done = TRUE; break;
        }
    }
    g_value_unset(&item);
    gst_iterator_free(it);
    return found;
}


// MoqPipeline / MoqTestKit: GValue types, instance checks and buffer access (macros in C).
static inline GType swiftmoq_type_char(void) { return G_TYPE_CHAR; }
static inline GType swiftmoq_type_uchar(void) { return G_TYPE_UCHAR; }
static inline GType swiftmoq_type_long(void) { return G_TYPE_LONG; }
static inline GType swiftmoq_type_ulong(void) { return G_TYPE_ULONG; }
static inline GType swiftmoq_type_float(void) { return G_TYPE_FLOAT; }
static inline GType swiftmoq_type_flags(void) { return G_TYPE_FLAGS; }
static inline GType swiftmoq_type_fraction(void) { return GST_TYPE_FRACTION; }
static inline GType swiftmoq_type_caps(void) { return GST_TYPE_CAPS; }
static inline GType swiftmoq_type_list(void) { return GST_TYPE_LIST; }
static inline GType swiftmoq_type_array(void) { return GST_TYPE_ARRAY; }
static inline GType swiftmoq_type_int_range(void) { return GST_TYPE_INT_RANGE; }
static inline GType swiftmoq_type_int64_range(void) { return GST_TYPE_INT64_RANGE; }
static inline GType swiftmoq_type_double_range(void) { return GST_TYPE_DOUBLE_RANGE; }
static inline GType swiftmoq_type_fraction_range(void) { return GST_TYPE_FRACTION_RANGE; }
static inline GType swiftmoq_value_type(const GValue *v) { return G_VALUE_TYPE(v); }
static inline gboolean swiftmoq_is_pipeline(gpointer obj) { return GST_IS_PIPELINE(obj); }
static inline gboolean swiftmoq_is_child_proxy(gpointer obj) { return GST_IS_CHILD_PROXY(obj); }
static inline GType swiftmoq_object_type(gpointer obj) { return G_OBJECT_TYPE(obj); }
static inline GstMessageType swiftmoq_message_type(GstMessage *m) { return GST_MESSAGE_TYPE(m); }
static inline guint swiftmoq_buffer_flags(GstBuffer *b) { return GST_BUFFER_FLAGS(b); }
static inline GstBuffer *swiftmoq_probe_info_buffer(GstPadProbeInfo *info) { return GST_PAD_PROBE_INFO_BUFFER(info); }
