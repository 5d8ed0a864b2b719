// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <string_view>

// The zip format's numbers (PKWARE's APPNOTE.TXT), declared once for the reader (ziparchive.cpp),
// the writer (zipwriter.cpp), the sniffer and the safety verdict's own walk over raw members
// (safety/pickleverdict.cpp), so that none of them can disagree with another on a signature or a
// header size.
namespace ckpt::zipformat {

// Record signatures, as the little-endian u32 that starts each record ...
constexpr std::uint32_t kLocalHeaderSignature = 0x04034b50;
constexpr std::uint32_t kCentralHeaderSignature = 0x02014b50;
constexpr std::uint32_t kEndRecordSignature = 0x06054b50;
constexpr std::uint32_t kZip64EndRecordSignature = 0x06064b50;
constexpr std::uint32_t kZip64LocatorSignature = 0x07064b50;
constexpr std::uint32_t kDataDescriptorSignature = 0x08074b50;

// ... and as the bytes in the file, for searching raw data.
constexpr std::string_view kLocalHeaderSignatureText {"PK\x03\x04", 4};
constexpr std::string_view kCentralHeaderSignatureText {"PK\x01\x02", 4};
constexpr std::string_view kEndRecordSignatureText {"PK\x05\x06", 4};
constexpr std::string_view kZip64EndRecordSignatureText {"PK\x06\x06", 4};
constexpr std::string_view kZip64LocatorSignatureText {"PK\x06\x07", 4};
constexpr std::string_view kDataDescriptorSignatureText {"PK\x07\x08", 4};

constexpr bool sameSignature(std::string_view text, std::uint32_t signature)
{
    std::uint32_t value = 0;
    for (std::size_t i = 0; i < 4; ++i)
        value |= static_cast<std::uint32_t>(static_cast<unsigned char>(text[i])) << (8 * i);
    return text.size() == 4 && value == signature;
}
static_assert(sameSignature(kLocalHeaderSignatureText, kLocalHeaderSignature));
static_assert(sameSignature(kCentralHeaderSignatureText, kCentralHeaderSignature));
static_assert(sameSignature(kEndRecordSignatureText, kEndRecordSignature));
static_assert(sameSignature(kZip64EndRecordSignatureText, kZip64EndRecordSignature));
static_assert(sameSignature(kZip64LocatorSignatureText, kZip64LocatorSignature));
static_assert(sameSignature(kDataDescriptorSignatureText, kDataDescriptorSignature));

// Fixed parts of each record, before its variable-length name, extra field or comment.
constexpr std::uint64_t kLocalHeaderSize = 30;
constexpr std::uint64_t kCentralHeaderSize = 46;
constexpr std::uint64_t kEndRecordSize = 22;
constexpr std::uint64_t kZip64LocatorSize = 20;
constexpr std::uint64_t kZip64EndRecordSize = 56; // with no extensible data, as every writer emits
constexpr std::uint64_t kMaxCommentLength = 0xffff; // the end record's comment length is a u16

// General-purpose flags, compression methods, extra-field ids.
constexpr std::uint16_t kFlagEncrypted = 0x0001;
constexpr std::uint16_t kFlagDataDescriptor = 0x0008;
constexpr std::uint16_t kFlagStrongEncryption = 0x0040;
constexpr std::uint16_t kFlagUtf8Name = 0x0800;
constexpr std::uint16_t kMethodStored = 0;
constexpr std::uint16_t kMethodDeflate = 8;
constexpr std::uint16_t kZip64ExtraId = 0x0001;

// A 32-bit (or 16-bit) field holding all ones says "the real value is in the ZIP64 records".
constexpr std::uint32_t kZip64Marker32 = 0xffffffff;
constexpr std::uint16_t kZip64Marker16 = 0xffff;

} // namespace ckpt::zipformat
