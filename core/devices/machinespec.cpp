// SPDX-License-Identifier: MIT
// Described machines ("cuda:0=24GiB,cpu=64GiB") and byte sizes, parsed exactly and written back.
#include "core/devices/machinespec.h"
#include "core/devices/devicetext.h"

#include "core/base/ascii.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>

namespace ckpt {

using devicetext::quoted;
using devicetext::splitCommas;
using devicetext::trimmed;

namespace {

struct SizeUnit {
    const char* name;
    std::uint64_t bytes;
};

// Largest first: formatMachineSpec() picks the first that divides a size exactly.
constexpr SizeUnit kSizeUnits[] = {
    {"TiB", 1ull << 40},
    {"TB", 1000ull * 1000 * 1000 * 1000},
    {"GiB", 1ull << 30},
    {"GB", 1000ull * 1000 * 1000},
    {"MiB", 1ull << 20},
    {"MB", 1000ull * 1000},
    {"KiB", 1ull << 10},
    {"KB", 1000ull},
};

bool equalsIgnoringCase(std::string_view a, std::string_view b)
{
    if (a.size() != b.size())
        return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
        const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
        if (lower(a[i]) != lower(b[i]))
            return false;
    }
    return true;
}

std::string formatSize(std::uint64_t bytes)
{
    if (bytes == 0)
        return "0";
    for (const SizeUnit& unit : kSizeUnits) {
        if (bytes % unit.bytes == 0)
            return std::to_string(bytes / unit.bytes) + unit.name;
    }
    return std::to_string(bytes);
}

bool isLowerLetter(char c)
{
    return (c >= 'a' && c <= 'z') || c == '_';
}

constexpr std::uint64_t kMaxDeviceCount = 1024;

// Sizes are computed exactly ("1.5TiB" is 1,649,267,441,664 bytes, not a double's neighbour).
__extension__ typedef unsigned __int128 WideUnsigned;

struct ParsedTag {
    std::string backend;
    std::optional<std::uint64_t> index;
    std::uint64_t count = 0; // 0: no "Nx" prefix
};

// Device tags as torch parses them (c10::Device): lower-case letters and underscores, then an
// optional ":index" without leading zeros.
Expected<ParsedTag> parseTag(std::string_view text)
{
    ParsedTag tag;
    std::size_t position = 0;
    if (!text.empty() && isDigit(text[0])) {
        while (position < text.size() && isDigit(text[position]))
            ++position;
        if (position >= text.size() || text[position] != 'x')
            return makeError("a device tag starts with a letter, as in cuda:0 (a count is written 2xcuda)");
        const std::string digits(text.substr(0, position));
        if (digits.size() > 4 || std::stoull(digits) == 0 || std::stoull(digits) > kMaxDeviceCount)
            return makeError(
                "the count " + digits + " must be between 1 and " + std::to_string(kMaxDeviceCount));
        tag.count = std::stoull(digits);
        ++position;
    }
    const std::string_view rest = text.substr(position);
    const auto colon = rest.find(':');
    const std::string_view backend = rest.substr(0, colon);
    if (backend.empty())
        return makeError("the device tag is missing: write TAG=SIZE, as in cuda:0=24GiB");
    for (const char c : backend) {
        if (c >= 'A' && c <= 'Z')
            return makeError("device tags are lower case, as torch writes them (cuda:0, not CUDA:0)");
        if (!isLowerLetter(c))
            return makeError(quoted(backend) + " is not a device type: it may hold only letters and '_'");
    }
    tag.backend = std::string(backend);
    if (colon != std::string_view::npos) {
        const std::string_view index = rest.substr(colon + 1);
        if (index.empty() || !std::all_of(index.begin(), index.end(), isDigit))
            return makeError("the index after " + quoted(std::string(backend) + ":")
                + " must be a number, as in " + std::string(backend) + ":1");
        if (index.size() > 1 && index[0] == '0')
            return makeError(
                "the index " + quoted(index) + " has a leading zero, which torch does not accept");
        if (index.size() > 6)
            return makeError("the index " + quoted(index) + " is too large");
        tag.index = std::stoull(std::string(index));
        if (tag.count > 0)
            return makeError(
                "a count goes with a bare device type (2x" + tag.backend + "), not with an index");
    }
    if (tag.backend == "cpu" && tag.index)
        return makeError("the CPU is written cpu, without an index");
    if (tag.backend == "cpu" && tag.count > 0)
        return makeError("a machine has one cpu entry; give its whole memory, as in cpu=64GiB");
    return tag;
}

bool isCudaTag(const std::string& tag)
{
    return tag.rfind("cuda:", 0) == 0;
}

std::uint64_t tagIndex(const std::string& tag)
{
    return std::stoull(tag.substr(tag.find(':') + 1));
}

} // namespace

Expected<std::uint64_t> parseByteSize(std::string_view input)
{
    const std::string_view text = trimmed(input);
    const std::string hint = ": write a size such as 24GiB, 80GB or 1.5TiB";
    if (text.empty())
        return makeError("no size given" + hint);
    if (text[0] == '-')
        return makeError("the size " + quoted(text) + " is negative" + hint);
    if (!isDigit(text[0]))
        return makeError("the size " + quoted(text) + " does not start with a number" + hint);

    std::size_t position = 0;
    WideUnsigned whole = 0;
    while (position < text.size() && isDigit(text[position])) {
        whole = whole * 10 + static_cast<unsigned>(text[position] - '0');
        if (whole > std::numeric_limits<std::uint64_t>::max())
            return makeError("the size " + quoted(text) + " is too large (at most 16 EiB)");
        ++position;
    }
    WideUnsigned fraction = 0;
    WideUnsigned scale = 1; // 10^(fraction digits)
    if (position < text.size() && text[position] == '.') {
        ++position;
        std::size_t digits = 0;
        while (position < text.size() && isDigit(text[position])) {
            if (digits < 18) { // beyond that, digits cannot change a whole byte count
                fraction = fraction * 10 + static_cast<unsigned>(text[position] - '0');
                scale *= 10;
            }
            ++digits;
            ++position;
        }
        if (digits == 0)
            return makeError("the size " + quoted(text) + " has no digits after the '.'" + hint);
    }
    const std::string_view unitText = trimmed(text.substr(position));
    std::uint64_t multiplier = 1;
    if (!unitText.empty() && !equalsIgnoringCase(unitText, "B")) {
        const SizeUnit* unit = nullptr;
        for (const SizeUnit& candidate : kSizeUnits) {
            if (equalsIgnoringCase(unitText, candidate.name))
                unit = &candidate;
        }
        if (!unit) {
            if (unitText.size() == 1
                && std::string_view("kKmMgGtT").find(unitText[0]) != std::string_view::npos) {
                const char letter
                    = static_cast<char>(unitText[0] >= 'a' ? unitText[0] - 'a' + 'A' : unitText[0]);
                return makeError("the unit " + quoted(unitText) + " in " + quoted(text)
                    + " is ambiguous: write " + letter + "B (powers of 1000) or " + letter
                    + "iB (powers of 1024)");
            }
            return makeError("unknown unit " + quoted(unitText) + " in " + quoted(text)
                + ": use B, KB, MB, GB, TB (powers of 1000) or KiB, MiB, GiB, TiB (powers of 1024)");
        }
        multiplier = unit->bytes;
    }

    const WideUnsigned numerator = (whole * scale + fraction) * multiplier;
    if (multiplier == 1 && numerator % scale != 0)
        return makeError("the size " + quoted(text) + " is not a whole number of bytes");
    const WideUnsigned bytes = (numerator + scale / 2) / scale; // nearest byte
    if (bytes > std::numeric_limits<std::uint64_t>::max())
        return makeError("the size " + quoted(text) + " is too large (at most 16 EiB)");
    return static_cast<std::uint64_t>(bytes);
}

Expected<MachineInventory> parseMachineSpec(std::string_view spec, std::string name)
{
    const std::string example = "cuda:0=24GiB,cuda:1=24GiB,cpu=64GiB";
    if (trimmed(spec).empty())
        return makeError("the machine spec is empty: describe the devices as in " + example);

    struct Entry {
        std::string tag;
        std::uint64_t bytes = 0;
        bool opaque = false;
        std::size_t part = 0;
        std::string partText;
    };
    std::vector<Entry> entries;
    std::map<std::string, std::uint64_t> nextIndex; // per device type: after the highest index given

    std::size_t offset = 0;
    std::size_t partNumber = 0;
    for (const std::string_view raw : splitCommas(spec)) {
        ++partNumber;
        const std::string_view part = trimmed(raw);
        const std::size_t partOffset = offset + static_cast<std::size_t>(part.data() - raw.data());
        offset += raw.size() + 1;
        const auto fail = [&](const std::string& why) -> ReadError {
            const std::string where = part.empty()
                ? "part " + std::to_string(partNumber)
                : "part " + std::to_string(partNumber) + " " + quoted(part);
            return makeError("in the machine spec " + quoted(spec) + ": " + where + " (at character "
                    + std::to_string(partOffset + 1) + "): " + why,
                partOffset);
        };
        if (part.empty())
            return fail("is empty; remove the extra comma");
        const auto equals = part.find('=');
        if (equals == std::string_view::npos)
            return fail("has no '=': write TAG=SIZE, as in cuda:0=24GiB");
        const auto tag = parseTag(trimmed(part.substr(0, equals)));
        if (!tag)
            return fail(tag.error().message);
        const auto bytes = parseByteSize(part.substr(equals + 1));
        if (!bytes)
            return fail(bytes.error().message);
        if (*bytes == 0)
            return fail("a device needs a capacity above 0 bytes");

        std::vector<std::string> tags;
        std::uint64_t& next = nextIndex[tag->backend];
        if (tag->index) {
            tags.push_back(tag->backend + ":" + std::to_string(*tag->index));
            next = std::max(next, *tag->index + 1);
        } else if (tag->count > 0 || tag->backend == "cuda") {
            // "2xcuda" and a bare "cuda" continue after any cuda:N given before them.
            const std::uint64_t count = std::max<std::uint64_t>(tag->count, 1);
            if (next + count > kMaxDeviceCount)
                return fail("more than " + std::to_string(kMaxDeviceCount) + " " + tag->backend + " devices");
            for (std::uint64_t i = 0; i < count; ++i)
                tags.push_back(tag->backend + ":" + std::to_string(next++));
        } else {
            tags.push_back(tag->backend); // "mps", "cpu": one device, named as torch names it
        }
        for (std::string& deviceTag : tags) {
            for (const Entry& earlier : entries) {
                if (earlier.tag == deviceTag) {
                    const bool samePart = earlier.part == partNumber;
                    return fail(deviceTag + " is described twice"
                        + (samePart ? std::string()
                                    : " (part " + std::to_string(earlier.part) + " "
                                    + quoted(earlier.partText) + " gives it too)"));
                }
            }
            const bool opaque = tag->backend != "cuda" && tag->backend != "cpu";
            entries.push_back(Entry {std::move(deviceTag), *bytes, opaque, partNumber, std::string(part)});
        }
    }

    // CUDA devices in ordinal order, then the others as given, the CPU last.
    std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
        const auto rank = [](const Entry& e) { return isCudaTag(e.tag) ? 0 : e.tag == "cpu" ? 2 : 1; };
        if (rank(a) != rank(b))
            return rank(a) < rank(b);
        if (rank(a) == 0)
            return tagIndex(a.tag) < tagIndex(b.tag);
        return false;
    });

    MachineInventory machine;
    machine.name = std::move(name);
    machine.described = true;
    std::vector<std::uint64_t> cudaIndices;
    for (Entry& entry : entries) {
        DeviceInfo device;
        device.tag = entry.tag;
        device.totalBytes = entry.bytes;
        device.opaque = entry.opaque;
        if (isCudaTag(entry.tag)) {
            device.name = "GPU";
            cudaIndices.push_back(tagIndex(entry.tag));
        } else if (entry.tag == "cpu") {
            device.name = "CPU";
        } else {
            device.name = entry.tag;
        }
        machine.devices.push_back(std::move(device));
    }
    for (std::uint64_t expected = 0; !cudaIndices.empty() && expected < cudaIndices.back(); ++expected) {
        if (std::find(cudaIndices.begin(), cudaIndices.end(), expected) == cudaIndices.end())
            machine.notes.push_back("cuda:" + std::to_string(expected)
                + " is not described, although a higher index is: torch numbers GPUs without gaps");
    }
    return machine;
}

std::string formatMachineSpec(const MachineInventory& machine)
{
    std::string spec;
    for (const DeviceInfo& device : machine.devices) {
        if (!spec.empty())
            spec += ',';
        spec += device.tag + "=" + formatSize(device.totalBytes);
    }
    return spec;
}

} // namespace ckpt
