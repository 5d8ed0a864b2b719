// SPDX-License-Identifier: MIT
#include "core/format/streamtransforms.h"

#include <zstd.h>

#include <memory>

namespace ckpt {

namespace {

struct Descriptor {
    std::string name; // with its @local-domain
    std::string version;
};

// As ExtensionRegistry.from_descriptor_list splits it: the name before the first '/', the version after.
Descriptor parse(const std::string& descriptor)
{
    const std::size_t slash = descriptor.find('/');
    if (slash == std::string::npos)
        return {descriptor, {}};
    return {descriptor.substr(0, slash), descriptor.substr(slash + 1)};
}

// ZStandard.from_descriptor accepts a version whose part before the first '.' is "1".
bool isZstd(const Descriptor& descriptor)
{
    return descriptor.name == "stream.zstd"
        && descriptor.version.substr(0, descriptor.version.find('.')) == "1";
}

// Every zstd frame of `raw` in order (ZSTD_decompressStream, as python-zstandard's stream_reader
// reads them), at most maxSize bytes.
Expected<ByteBuffer> unzstd(ByteView raw, std::uint64_t maxSize)
{
    const std::unique_ptr<ZSTD_DCtx, decltype(&ZSTD_freeDCtx)> context(ZSTD_createDCtx(), &ZSTD_freeDCtx);
    if (!context)
        return makeError("zstd: out of memory");
    ByteBuffer out;
    ZSTD_inBuffer input {raw.data(), raw.size(), 0};
    std::vector<std::uint8_t> piece(ZSTD_DStreamOutSize());
    std::size_t last = 0; // 0 once a frame is complete, else a hint of what it still needs
    bool outputFull = false; // the last call filled the piece: more may be held inside
    while (input.pos < input.size || outputFull) {
        ZSTD_outBuffer output {piece.data(), piece.size(), 0};
        last = ZSTD_decompressStream(context.get(), &output, &input);
        if (ZSTD_isError(last) != 0)
            return makeError(std::string("the zstd stream is corrupt (") + ZSTD_getErrorName(last)
                    + ") at byte " + std::to_string(input.pos) + " of its " + std::to_string(raw.size()),
                input.pos);
        if (out.size() + output.pos > maxSize)
            return makeError("the zstd stream decompresses to more than " + std::to_string(maxSize)
                + " bytes, more than the item can hold; it is not decompressed further");
        out.insert(out.end(), piece.begin(), piece.begin() + static_cast<std::ptrdiff_t>(output.pos));
        outputFull = output.pos == output.size;
    }
    if (last != 0)
        return makeError("the zstd stream is cut off: its last frame does not end within the "
            + std::to_string(raw.size()) + " bytes recorded for it");
    return out;
}

} // namespace

bool isKnownStreamTransform(const std::string& descriptor)
{
    return isZstd(parse(descriptor));
}

std::string unknownStreamTransforms(const std::vector<std::string>& descriptors)
{
    std::string unknown;
    for (const std::string& descriptor : descriptors)
        if (!isKnownStreamTransform(descriptor))
            unknown += (unknown.empty() ? "" : ", ") + descriptor;
    return unknown;
}

Expected<ByteBuffer> undoStreamTransforms(
    ByteView raw, const std::vector<std::string>& descriptors, std::uint64_t maxSize)
{
    ByteBuffer current(raw.begin(), raw.end());
    for (const std::string& text : descriptors) {
        const Descriptor descriptor = parse(text);
        if (descriptor.name == "stream.zstd" && !isZstd(descriptor))
            return makeError("Unknown extension version='" + descriptor.version
                + "' of stream.zstd (torch's "
                  "ZStandard reads version 1)");
        if (!isZstd(descriptor))
            return makeError("Unknown extension name='" + descriptor.name
                + "': a writer extension torch's default registry does not know; its bytes are not undone");
        auto undone = unzstd(ByteView(current.data(), current.size()), maxSize);
        if (!undone)
            return undone.error();
        current = std::move(*undone);
    }
    return current;
}

} // namespace ckpt
