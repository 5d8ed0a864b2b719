// SPDX-License-Identifier: MIT
#include "core/plan/placementplan.h"

#include "core/base/pythonliteral.h"
#include "core/model/checkpoint.h"

#include <algorithm>

namespace ckpt {

bool isPlausibleDeviceTag(const std::string& tag)
{
    // torch's tags are "<backend>" or "<backend>:<index>" with a lower-case backend name
    // (register_package allows any string, but a plan should only write what torch writes).
    if (tag.empty())
        return false;
    const auto colon = tag.find(':');
    const std::string backend = tag.substr(0, colon);
    if (backend.empty() || !std::all_of(backend.begin(), backend.end(), [](char c) {
            return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
        }))
        return false;
    if (colon == std::string::npos)
        return true;
    const std::string index = tag.substr(colon + 1);
    return !index.empty() && index.size() < 6
        && std::all_of(index.begin(), index.end(), [](char c) { return c >= '0' && c <= '9'; });
}

Expected<PlacementRule> PlacementRule::parse(Kind kind, const std::string& text)
{
    const auto equals = text.rfind('=');
    if (equals == std::string::npos || equals == 0 || equals + 1 == text.size())
        return makeError("'" + text + "' is not of the form "
            + (kind == Kind::MapTag            ? "FROM=TO"
                    : kind == Kind::MoveTensor ? "NAME=DEVICE"
                                               : "PREFIX=DEVICE"));
    PlacementRule rule;
    rule.kind = kind;
    rule.subject = text.substr(0, equals);
    rule.target = text.substr(equals + 1);
    if (!isPlausibleDeviceTag(rule.target))
        return makeError("'" + rule.target
            + "' is not a device torch writes (expected e.g. cpu, cuda:0, cuda, mps, xpu:1)");
    if (kind == Kind::MapTag && rule.subject != "*" && !isPlausibleDeviceTag(rule.subject))
        return makeError(
            "'" + rule.subject + "' is not a device tag (expected e.g. cuda:1, or * for every device)");
    return rule;
}

std::string PlacementRule::describe() const
{
    const char* flag = kind == Kind::MapTag ? "--map" : kind == Kind::MoveTensor ? "--tensor" : "--module";
    return std::string(flag) + " " + subject + "=" + target;
}

PlacementPlan::PlacementPlan(const Checkpoint& checkpoint)
    : m_checkpoint(checkpoint)
{
    m_tags.emplace_back(std::nullopt); // kNoDeviceTag
    m_unitOfTensor.assign(checkpoint.tensors.size(), -1);
    // Counted first so the units are allocated once: grown by doubling, a million units held the
    // old and the new block at once at the launch's peak.
    std::size_t unitCount = checkpoint.storages.size();
    for (const TensorEntry& tensor : checkpoint.tensors)
        if (tensor.deviceRecordedOutsideStorage && tensor.device)
            ++unitCount;
    m_units.reserve(unitCount);
    // Storages come in runs of one device, and interned devices compare by pointer: the last tag
    // is tried before the index.
    std::optional<InternedString> lastDevice;
    std::uint32_t lastTag = kNoDeviceTag;
    for (std::uint32_t s = 0; s < checkpoint.storages.size(); ++s) {
        const std::optional<InternedString>& device = checkpoint.storages[s].device;
        if (s == 0 || lastDevice != device) {
            lastTag = device ? internTag(std::string_view(*device)) : kNoDeviceTag;
            lastDevice = device;
        }
        m_units.push_back({static_cast<std::int32_t>(s), -1, lastTag});
    }
    for (std::uint32_t t = 0; t < checkpoint.tensors.size(); ++t) {
        const TensorEntry& tensor = checkpoint.tensors[t];
        if (tensor.deviceRecordedOutsideStorage && tensor.device) {
            // Its device is written beside its data (wrapper subclasses, device tensors, meta).
            m_unitOfTensor[t] = static_cast<std::int32_t>(m_units.size());
            m_units.push_back(
                {-1, static_cast<std::int32_t>(t), internTag(std::string_view(*tensor.device))});
        } else if (tensor.storage >= 0) {
            m_unitOfTensor[t] = unitOfStorage(static_cast<std::uint32_t>(tensor.storage));
        }
    }
    // Sorted as (name, index) pairs, which compare without a second indirection (sorting the
    // indices through the tensors took half as long again), then kept as indices alone.
    std::vector<std::pair<std::string_view, std::uint32_t>> names;
    names.reserve(checkpoint.tensors.size());
    for (std::uint32_t t = 0; t < checkpoint.tensors.size(); ++t)
        names.emplace_back(checkpoint.tensors[t].name, t);
    if (!std::is_sorted(names.begin(), names.end()))
        std::sort(names.begin(), names.end());
    m_sortedTensors.reserve(names.size());
    for (const auto& [name, t] : names)
        m_sortedTensors.push_back(t);
    m_planned.reserve(m_units.size());
    for (const PlacementUnit& unit : m_units)
        m_planned.push_back(unit.recordedTag);
}

std::uint32_t PlacementPlan::internTag(const std::optional<std::string>& device)
{
    return device ? internTag(std::string_view(*device)) : kNoDeviceTag;
}

std::uint32_t PlacementPlan::internTag(std::string_view device)
{
    const auto [it, added]
        = m_tagIndex.try_emplace(std::string(device), static_cast<std::uint32_t>(m_tags.size()));
    if (added)
        m_tags.emplace_back(std::string(device));
    return it->second;
}

std::int32_t PlacementPlan::unitOfStorage(std::uint32_t storage) const
{
    // Every storage is a unit, in order.
    return storage < m_checkpoint.storages.size() && storage < m_units.size()
        ? static_cast<std::int32_t>(storage)
        : -1;
}

std::int32_t PlacementPlan::unitOfTensor(std::uint32_t tensor) const
{
    return tensor < m_unitOfTensor.size() ? m_unitOfTensor[tensor] : -1;
}

std::optional<std::string> PlacementPlan::plannedDeviceOfStorage(std::uint32_t storage) const
{
    const std::int32_t unit = unitOfStorage(storage);
    return unit < 0 ? std::nullopt : tag(m_planned[static_cast<std::size_t>(unit)]);
}

std::optional<std::string> PlacementPlan::plannedDeviceOfTensor(std::uint32_t tensor) const
{
    const std::int32_t unit = unitOfTensor(tensor);
    return unit < 0 ? std::nullopt : tag(m_planned[static_cast<std::size_t>(unit)]);
}

bool PlacementPlan::changesAnything() const
{
    for (std::size_t u = 0; u < m_units.size(); ++u)
        if (m_planned[u] != m_units[u].recordedTag)
            return true;
    return false;
}

PlacementChange PlacementPlan::apply(const PlacementRule& rule)
{
    PlacementChange change;
    // Sorted vectors rather than sets: a drop of a large module names a hundred thousand tensors,
    // and the app applies it while the person waits.
    std::vector<std::uint32_t> units;
    std::vector<std::uint32_t> namedTensors;
    bool metaSkipped = false;
    // Tags are interned, so a device is one index: "meta" is the tag spelled so, if any.
    const auto metaFound = m_tagIndex.find("meta");
    const std::uint32_t meta = metaFound == m_tagIndex.end() ? kNoDeviceTag : metaFound->second;
    switch (rule.kind) {
    case PlacementRule::Kind::MapTag: {
        // Like a map_location dict: it looks at the tag recorded in the file.
        const auto subjectFound = m_tagIndex.find(rule.subject);
        const bool every = rule.subject == "*";
        const std::uint32_t subject = subjectFound == m_tagIndex.end() ? kNoDeviceTag : subjectFound->second;
        if (!every && subject == kNoDeviceTag)
            break; // no unit is recorded on that device
        for (std::uint32_t u = 0; u < m_units.size(); ++u) {
            const std::uint32_t recorded = m_units[u].recordedTag;
            if (recorded == kNoDeviceTag)
                continue;
            if (every || recorded == subject) {
                if (recorded == meta) {
                    metaSkipped = true;
                    continue;
                }
                units.push_back(u);
            }
        }
        break;
    }
    case PlacementRule::Kind::MoveTensor:
    case PlacementRule::Kind::MoveModule: {
        // Every name that matches starts with the subject: a range of the sorted names.
        const auto& tensors = m_checkpoint.tensors;
        const std::string_view subject = rule.subject;
        for (auto it = std::lower_bound(m_sortedTensors.begin(), m_sortedTensors.end(), subject,
                 [&tensors](std::uint32_t t, std::string_view wanted) { return tensors[t].name < wanted; });
             it != m_sortedTensors.end() && std::string_view(tensors[*it].name).starts_with(subject); ++it) {
            const std::string_view name = tensors[*it].name;
            const std::uint32_t t = *it;
            const bool matches = rule.kind == PlacementRule::Kind::MoveTensor
                ? name == subject
                : (name == subject
                    || (name.size() > subject.size() && name.compare(0, subject.size(), subject) == 0
                        && (name[subject.size()] == '.' || name[subject.size()] == '[')));
            if (!matches)
                continue;
            namedTensors.push_back(t);
            const std::int32_t unit = m_unitOfTensor[t];
            if (unit < 0)
                continue;
            if (meta != kNoDeviceTag && m_units[static_cast<std::size_t>(unit)].recordedTag == meta) {
                metaSkipped = true;
                continue;
            }
            units.push_back(static_cast<std::uint32_t>(unit));
        }
        break;
    }
    }
    std::sort(units.begin(), units.end());
    units.erase(std::unique(units.begin(), units.end()), units.end());
    std::sort(namedTensors.begin(), namedTensors.end());
    namedTensors.erase(std::unique(namedTensors.begin(), namedTensors.end()), namedTensors.end());
    if (metaSkipped)
        change.notes.push_back("meta tensors hold no data and stay on meta");
    const std::uint32_t target = units.empty() ? kNoDeviceTag : internTag(std::string_view(rule.target));
    for (std::uint32_t u : units) {
        if (m_planned[u] != target) {
            change.previousDevices.push_back(tag(m_planned[u]));
            m_planned[u] = target;
            change.unitsChanged.push_back(u);
        }
        // Every other tensor viewing this storage goes with it.
        if (m_units[u].storage >= 0 && rule.kind != PlacementRule::Kind::MapTag)
            for (std::uint32_t t :
                m_checkpoint.storages[static_cast<std::size_t>(m_units[u].storage)].tensors)
                if (!std::binary_search(namedTensors.begin(), namedTensors.end(), t))
                    change.tensorsDraggedAlong.push_back(t);
    }
    change.tensorsNamed = std::move(namedTensors);
    m_rules.push_back(rule);
    return change;
}

PlacementChange PlacementPlan::restore(
    const std::vector<std::pair<std::uint32_t, std::optional<std::string>>>& devices)
{
    PlacementChange change;
    for (const auto& [unit, device] : devices) {
        if (unit >= m_planned.size())
            continue;
        const std::uint32_t wanted = internTag(device);
        if (m_planned[unit] == wanted)
            continue;
        change.previousDevices.push_back(tag(m_planned[unit]));
        m_planned[unit] = wanted;
        change.unitsChanged.push_back(unit);
    }
    return change;
}

std::optional<std::map<std::string, std::string>> PlacementPlan::asTagMapping() const
{
    // Recorded tag -> planned tag, by index (tags are interned: equal indices, equal devices).
    std::vector<std::uint32_t> plannedOf(m_tags.size(), kNoDeviceTag);
    for (std::size_t u = 0; u < m_units.size(); ++u) {
        const std::uint32_t recorded = m_units[u].recordedTag;
        const std::uint32_t planned = m_planned[u];
        if (recorded == kNoDeviceTag || planned == kNoDeviceTag)
            continue;
        if (plannedOf[recorded] == kNoDeviceTag)
            plannedOf[recorded] = planned;
        else if (plannedOf[recorded] != planned)
            return std::nullopt; // two storages recorded alike go to different places
    }
    std::map<std::string, std::string> mapping;
    for (std::uint32_t recorded = 0; recorded < plannedOf.size(); ++recorded)
        if (plannedOf[recorded] != kNoDeviceTag)
            mapping.emplace(*m_tags[recorded], *m_tags[plannedOf[recorded]]);
    for (auto it = mapping.begin(); it != mapping.end();) {
        if (it->first == it->second)
            it = mapping.erase(it);
        else
            ++it;
    }
    return mapping;
}

std::string PlacementPlan::asPython(const std::string& checkpointPath) const
{
    if (auto mapping = asTagMapping()) {
        std::string literal = "{";
        bool first = true;
        for (const auto& [from, to] : *mapping) {
            literal += (first ? "" : ", ") + pythonStringLiteral(from) + ": " + pythonStringLiteral(to);
            first = false;
        }
        literal += "}";
        return "# The plan is a pure tag-to-tag mapping: pass it as map_location.\n"
               "map_location = "
            + literal + "\ncheckpoint = torch.load(" + pythonStringLiteral(checkpointPath)
            + ", map_location=map_location)\n";
    }
    // Per-tensor plans cannot be said with map_location (it sees a storage and its tag, never a
    // name): load on the CPU, then move each tensor to its planned device.
    std::string moves;
    for (std::uint32_t t = 0; t < m_checkpoint.tensors.size(); ++t) {
        const TensorEntry& tensor = m_checkpoint.tensors[t];
        if (tensor.name.find('[') != std::string::npos)
            continue; // parts of composite tensors move with them
        const auto planned = plannedDeviceOfTensor(t);
        if (!planned || *planned == "cpu")
            continue;
        moves += "    " + pythonStringLiteral(tensor.name) + ": " + pythonStringLiteral(*planned) + ",\n";
    }
    return "import torch\n\n"
           "# This plan places tensors one by one, which map_location cannot express: load on the\n"
           "# CPU, then move each tensor. Tensors that shared a storage (views, tied weights) become\n"
           "# separate copies after .to(); the remapped copy written by ckpt-inspect keeps them shared.\n"
           "checkpoint = torch.load("
        + pythonStringLiteral(checkpointPath)
        + ", map_location='cpu')\n"
          "moves = {\n"
        + moves
        + "}\n\n"
          "def _move(root, path, device):\n"
          "    parts = path.split('.')\n"
          "    parent = root\n"
          "    for part in parts[:-1]:\n"
          "        parent = parent[int(part) if isinstance(parent, (list, tuple)) else part] "
          "if not hasattr(parent, '_modules') else getattr(parent, part)\n"
          "    key = parts[-1]\n"
          "    if isinstance(parent, dict):\n"
          "        parent[key] = parent[key].to(device)\n"
          "    elif isinstance(parent, list):\n"
          "        parent[int(key)] = parent[int(key)].to(device)\n"
          "    else:\n"
          "        setattr(parent, key, getattr(parent, key).to(device))\n\n"
          "for path, device in moves.items():\n"
          "    _move(checkpoint, path, device)\n";
}

} // namespace ckpt
