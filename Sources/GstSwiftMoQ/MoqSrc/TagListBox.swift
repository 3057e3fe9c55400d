// SPDX-License-Identifier: MIT
import CGStreamer

/// An owned `GstTagList` handed from the control queue to a pad's thread.
final class TagListBox: @unchecked Sendable {
    private var list: UnsafeMutablePointer<GstTagList>?
    init(_ list: UnsafeMutablePointer<GstTagList>?) { self.list = list }
    /// The list, once (the caller owns it).
    func take() -> UnsafeMutablePointer<GstTagList>? {
        defer { list = nil }
        return list
    }
    deinit { if let list { gst_tag_list_unref(list) } }
}
