// SPDX-License-Identifier: MIT
#pragma once
// libcurl and libarchive, opened on first use rather than linked: with their dependencies (gnutls,
// krb5, libxml2, ICU, nettle, ...) they cost every start of ckpt-inspect about 15 ms and 8 MB of
// resident memory, for remote URLs and compressed wrappers that most runs never meet (measured on
// Debian 12: an empty program linked to both starts in 19 ms at 10.6 MB, without them in 4 ms at
// 2.8 MB; `info --json` of 100,000 tensors peaked 8 MB lower once they were gone).
//
// Each table holds the functions the code calls, typed from the library's own header, so a call
// through it is checked like a direct call. A machine without the library (the Debian package
// declares both) gets an error naming the package from the command that needed it, and nothing
// else changes. Loaded once per process and never unloaded.
#include "core/base/expected.h"

#include <archive.h>
#include <archive_entry.h>
#include <curl/curl.h>

namespace ckpt {

// Members are the names without their "curl_" prefix: curl.h defines curl_easy_setopt and
// curl_easy_getinfo as type-checking macros, which a member access by that name would expand.
#define CKPT_CURL_FUNCTIONS(X)                                                                               \
    X(global_init)                                                                                           \
    X(easy_init)                                                                                             \
    X(easy_cleanup)                                                                                          \
    X(easy_setopt)                                                                                           \
    X(easy_perform)                                                                                          \
    X(easy_getinfo)                                                                                          \
    X(easy_strerror)

struct CurlLibrary {
// NOLINTNEXTLINE(bugprone-macro-parentheses): `name` declares the member
#define CKPT_CURL_MEMBER(name) decltype(&::curl_##name) name = nullptr;
    CKPT_CURL_FUNCTIONS(CKPT_CURL_MEMBER)
#undef CKPT_CURL_MEMBER
};

// libcurl.so.4 with curl_global_init done, or why it cannot be used.
Expected<const CurlLibrary*> curlLibrary();
// The table, for code reached only after curlLibrary() succeeded (it throws otherwise).
const CurlLibrary& libcurl();

#define CKPT_ARCHIVE_FUNCTIONS(X)                                                                            \
    X(entry_filetype)                                                                                        \
    X(entry_pathname)                                                                                        \
    X(entry_set_size)                                                                                        \
    X(entry_size)                                                                                            \
    X(entry_size_is_set)                                                                                     \
    X(error_string)                                                                                          \
    X(filter_code)                                                                                           \
    X(filter_count)                                                                                          \
    X(filter_name)                                                                                           \
    X(format)                                                                                                \
    X(format_name)                                                                                           \
    X(read_data)                                                                                             \
    X(read_data_block)                                                                                       \
    X(read_data_skip)                                                                                        \
    X(read_free)                                                                                             \
    X(read_new)                                                                                              \
    X(read_next_header)                                                                                      \
    X(read_open_memory)                                                                                      \
    X(read_support_filter_all)                                                                               \
    X(read_support_format_all)                                                                               \
    X(read_support_format_gnutar)                                                                            \
    X(read_support_format_raw)                                                                               \
    X(read_support_format_tar)                                                                               \
    X(read_support_format_zip)                                                                               \
    X(write_add_filter)                                                                                      \
    X(write_close)                                                                                           \
    X(write_data)                                                                                            \
    X(write_free)                                                                                            \
    X(write_header)                                                                                          \
    X(write_new)                                                                                             \
    X(write_open2)                                                                                           \
    X(write_set_bytes_in_last_block)                                                                         \
    X(write_set_format_gnutar)                                                                               \
    X(write_set_format_pax_restricted)                                                                       \
    X(write_set_format_raw)                                                                                  \
    X(write_set_format_zip)                                                                                  \
    X(write_zip_set_compression_deflate)                                                                     \
    X(write_zip_set_compression_store)

// Members are the names without their "archive_" prefix.
struct ArchiveLibrary {
// NOLINTNEXTLINE(bugprone-macro-parentheses): `name` declares the member
#define CKPT_ARCHIVE_MEMBER(name) decltype(&::archive_##name) name = nullptr;
    CKPT_ARCHIVE_FUNCTIONS(CKPT_ARCHIVE_MEMBER)
#undef CKPT_ARCHIVE_MEMBER
};

// libarchive.so.13, or why it cannot be used.
Expected<const ArchiveLibrary*> archiveLibrary();
// The table, for code reached only after archiveLibrary() succeeded (it throws otherwise).
const ArchiveLibrary& libarchive();

} // namespace ckpt
