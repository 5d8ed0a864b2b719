// SPDX-License-Identifier: MIT
#include "command.h"

#include "core/devices/deviceinventory.h"

#include <charconv>

namespace cli {

namespace {

// A list, not a container with a destructor: it must still point at everything when
// LeakSanitizer looks, after static destructors have run.
struct KeptObject {
    const void* object;
    const KeptObject* next;
};
const KeptObject* g_keptObjects = nullptr;

} // namespace

void keepUntilExit(const void* object)
{
    g_keptObjects = new KeptObject {object, g_keptObjects};
}

CLI::Option* addWholeNumberOption(CLI::App& command, const std::string& name, std::uint64_t& target,
    const std::string& description, std::uint64_t minimum, std::uint64_t maximum)
{
    auto* option = command.add_option_function<std::string>(
        name,
        [&target, name, minimum, maximum](const std::string& text) {
            std::uint64_t value = 0;
            const char* end = text.data() + text.size();
            const auto [stop, error] = std::from_chars(text.data(), end, value);
            if (text.empty() || error != std::errc() || stop != end)
                throw CLI::ValidationError(name, "'" + text + "' is not a whole number of 0 or more");
            if (value < minimum)
                throw CLI::ValidationError(name, "must be " + std::to_string(minimum) + " or more");
            if (value > maximum)
                throw CLI::ValidationError(name, "must be " + std::to_string(maximum) + " or less");
            target = value;
        },
        description);
    option->type_name("N");
    return option;
}

CLI::Option* addByteSizeOption(CLI::App& command, const std::string& name, std::uint64_t& target,
    const std::string& description, bool positive)
{
    auto* option = command.add_option_function<std::string>(
        name,
        [&target, name, positive](const std::string& text) {
            auto bytes = ckpt::parseByteSize(text);
            if (!bytes)
                throw CLI::ValidationError(name, bytes.error().message);
            if (positive && *bytes == 0)
                throw CLI::ValidationError(name, "must be more than 0");
            target = *bytes;
        },
        description);
    option->type_name("SIZE");
    return option;
}

CLI::Option* addPathArgument(
    CLI::App& command, const std::string& name, std::string& target, const std::string& description)
{
    return command.add_option(name, target, description)->type_name("")->required();
}

void addJsonFlag(CLI::App& command, bool& json)
{
    command.add_flag("--json", json, "print JSON instead of text");
}

void addNoVerifyFlag(CLI::App& command, bool& verify)
{
    command.add_flag_callback(
        "--no-verify", [&verify] { verify = false; }, "skip reading the output back");
}

} // namespace cli
