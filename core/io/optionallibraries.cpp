// SPDX-License-Identifier: MIT
#include "core/io/optionallibraries.h"

#include "core/io/sharedlibrary.h"

namespace ckpt {

namespace {

// Every function of the table from the library, or an error naming the first one missing (an
// older library than the build's header).
template<class Table, class Fill>
Expected<const Table*> loadTable(const char* soname, const char* package, const char* purpose, Fill fill)
{
    std::string whyNot;
    void* library = openSharedLibrary(soname, &whyNot);
    if (!library)
        return makeError(std::string(purpose) + " needs " + soname + " (Debian package " + package
            + "), which cannot be loaded: " + whyNot);
    static Table table;
    if (const char* missing = fill(library, table))
        return makeError(std::string(soname) + " has no " + missing + ", which " + purpose
            + " needs (Debian package " + package + " is older than the build's)");
    return &table;
}

} // namespace

// In a table's fill: its member `name` from the library's symbol prefix + name, or that symbol's
// name returned as the one missing. `prefix` is a string literal joined to the name's: it cannot
// be parenthesised.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define CKPT_FIND_FUNCTION(prefix, name)                                                                     \
    table.name = reinterpret_cast<decltype(table.name)>(findLibrarySymbol(handle, prefix #name));            \
    if (!table.name)                                                                                         \
        return prefix #name;
// NOLINTEND(bugprone-macro-parentheses)

Expected<const CurlLibrary*> curlLibrary()
{
    // A function-local static: loaded once, by whichever thread asks first, the others wait.
    static const Expected<const CurlLibrary*> loaded = [] {
        auto library = loadTable<CurlLibrary>("libcurl.so.4", "libcurl4", "reading a remote URL",
            [](void* handle, CurlLibrary& table) -> const char* {
#define CKPT_CURL_FIND(name) CKPT_FIND_FUNCTION("curl_", name)
                CKPT_CURL_FUNCTIONS(CKPT_CURL_FIND)
#undef CKPT_CURL_FIND
                return nullptr;
            });
        if (library)
            (*library)->global_init(CURL_GLOBAL_DEFAULT);
        return library;
    }();
    return loaded;
}

const CurlLibrary& libcurl()
{
    return **curlLibrary();
}

Expected<const ArchiveLibrary*> archiveLibrary()
{
    static const Expected<const ArchiveLibrary*> loaded = loadTable<ArchiveLibrary>("libarchive.so.13",
        "libarchive13", "unpacking an archive", [](void* handle, ArchiveLibrary& table) -> const char* {
#define CKPT_ARCHIVE_FIND(name) CKPT_FIND_FUNCTION("archive_", name)
            CKPT_ARCHIVE_FUNCTIONS(CKPT_ARCHIVE_FIND)
#undef CKPT_ARCHIVE_FIND
            return nullptr;
        });
    return loaded;
}

const ArchiveLibrary& libarchive()
{
    return **archiveLibrary();
}

#undef CKPT_FIND_FUNCTION

} // namespace ckpt
