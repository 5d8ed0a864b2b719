// SPDX-License-Identifier: MIT
// Described machines saved by name in $XDG_CONFIG_HOME/ckpt-inspector/targets.json, and the one
// rule that turns a command's SPEC (profile name, spec or nothing) into a machine.
#include "core/devices/targetprofiles.h"
#include "core/devices/devicetext.h"

#include "core/devices/detectmachine.h"
#include "core/devices/machinespec.h"
#include "core/io/atomicoutputfile.h"
#include "core/json/json.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

namespace ckpt {

using devicetext::quoted;
using devicetext::trimmed;

namespace {

std::string homeFolder()
{
    if (const char* home = std::getenv("HOME"); home && *home)
        return home;
    if (const passwd* entry = ::getpwuid(::getuid()); entry && entry->pw_dir)
        return entry->pw_dir;
    return ".";
}

// mkdir -p; folders the tool creates for configuration are private (0700, as the XDG base
// directory specification asks for the folders it describes).
Status createFolders(const std::string& folder)
{
    if (folder.empty())
        return std::nullopt;
    std::size_t position = 0;
    while (position != std::string::npos) {
        position = folder.find('/', position + 1);
        const std::string prefix = folder.substr(0, position);
        if (prefix.empty())
            continue;
        if (::mkdir(prefix.c_str(), 0700) != 0 && errno != EEXIST)
            return makeError("cannot create the folder " + prefix + ": " + std::strerror(errno));
    }
    struct stat info { };
    if (::stat(folder.c_str(), &info) != 0 || !S_ISDIR(info.st_mode))
        return makeError("cannot create the folder " + folder + ": something else has that name");
    return std::nullopt;
}

} // namespace

TargetProfiles::TargetProfiles(std::string path)
    : m_path(std::move(path))
{ }

std::string TargetProfiles::defaultPath()
{
    // XDG: a relative XDG_CONFIG_HOME is invalid and must be ignored.
    std::string base;
    if (const char* config = std::getenv("XDG_CONFIG_HOME"); config && config[0] == '/')
        base = config;
    else
        base = homeFolder() + "/.config";
    return base + "/ckpt-inspector/targets.json";
}

Status TargetProfiles::load()
{
    std::ifstream file(m_path, std::ios::binary);
    if (!file) {
        if (errno == ENOENT) {
            m_profiles.clear();
            return std::nullopt;
        }
        return makeError("cannot read the saved targets " + m_path + ": " + std::strerror(errno));
    }
    std::ostringstream content;
    content << file.rdbuf();
    const std::string text = content.str();
    const auto document = parseJson(text);
    if (!document)
        return makeError("the saved targets " + m_path + " are not valid: " + document.error().message,
            document.error().offset);
    const JsonValue* profiles = document->find("profiles");
    if (!document->isObject() || (profiles && !profiles->isObject()))
        return makeError("the saved targets " + m_path
            + " are not valid: expected {\"profiles\": {\"NAME\": \"SPEC\", ...}}");

    std::map<std::string, std::string> loaded;
    if (profiles) {
        for (const JsonMember& member : profiles->members()) {
            if (!member.value.isString())
                return makeError("the saved targets " + m_path + " are not valid: the profile "
                    + quoted(member.key) + " is not a spec string such as "
                    + quoted("cuda:0=24GiB,cpu=64GiB"));
            // Specs are checked when used, not here: one hand-edited mistake must not hide the rest.
            loaded[member.key] = member.value.toString();
        }
    }
    m_profiles = std::move(loaded);
    return std::nullopt;
}

Status TargetProfiles::save() const
{
    const auto slash = m_path.find_last_of('/');
    if (slash != std::string::npos && slash > 0) {
        if (Status created = createFolders(m_path.substr(0, slash)))
            return created;
    }
    JsonWriter writer(JsonStyle::Pretty);
    writer.beginObject().key("profiles").beginObject();
    for (const auto& [name, spec] : m_profiles)
        writer.member(name, spec);
    writer.endObject().endObject();
    const std::string text = writer.takeText() + "\n";

    auto output = AtomicOutputFile::create(m_path, {}, text.size());
    if (!output)
        return makeError("cannot save the targets: " + output.error().message);
    if (Status problem = (*output)->write(text))
        return makeError("cannot save the targets: " + problem->message);
    if (Status committed = (*output)->commit())
        return makeError("cannot save the targets: " + committed->message);
    return std::nullopt;
}

Status TargetProfiles::set(const std::string& name, const std::string& spec)
{
    if (trimmed(name).empty())
        return makeError("a saved target needs a name, such as \"lab box\"");
    if (trimmed(name) != name)
        return makeError("the target name " + quoted(name) + " starts or ends with spaces");
    if (name.find('=') != std::string::npos)
        return makeError(
            "the target name " + quoted(name) + " contains '=', which would read as a machine spec");
    const auto parsed = parseMachineSpec(spec, name);
    if (!parsed)
        return parsed.error();
    m_profiles[name] = std::string(trimmed(spec));
    return std::nullopt;
}

bool TargetProfiles::remove(const std::string& name)
{
    return m_profiles.erase(name) > 0;
}

std::optional<std::string> TargetProfiles::find(const std::string& name) const
{
    const auto it = m_profiles.find(name);
    if (it == m_profiles.end())
        return std::nullopt;
    return it->second;
}

Expected<MachineInventory> resolveMachine(const std::string& nameOrSpec, const TargetProfiles& profiles)
{
    const std::string text(trimmed(nameOrSpec));
    if (text.empty())
        return detectThisMachine();
    if (const std::optional<std::string> spec = profiles.find(text)) {
        auto machine = parseMachineSpec(*spec, text);
        if (!machine)
            return makeError(
                "the saved target " + quoted(text) + " holds an invalid spec: " + machine.error().message);
        return machine;
    }
    auto machine = parseMachineSpec(text);
    if (machine)
        return machine;

    std::string saved;
    for (const auto& [name, spec] : profiles.profiles())
        saved += (saved.empty() ? "" : ", ") + quoted(name);
    const std::string names = saved.empty() ? "there are no saved targets" : "saved targets: " + saved;
    if (text.find('=') == std::string::npos)
        return makeError(quoted(text) + " is neither a saved target (" + names
            + ") nor a machine spec such as cuda:0=24GiB,cpu=64GiB");
    return makeError(quoted(text) + " is not a saved target (" + names
        + "), and as a machine spec it fails: " + machine.error().message);
}

} // namespace ckpt
